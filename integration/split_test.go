package integration

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// The experiment split over 100,000 events through two workers: every key
// always lands in the same variant, variant shares are within 1% of their
// weights, and no key is in two experiments of one layer. It runs on
// kfake and on Apache Kafka.
func TestExperimentSplit(t *testing.T) {
	OnBrokers(t, BothBrokers, RunExperimentSplit)
}
