package integration

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// Records at the broker's 1 MiB limit: an input topic with the broker's
// default max.message.bytes (1,048,588 bytes a batch) takes events whose
// values are at the decoder's maximum (1,000,000 bytes), one byte over
// it, and as large as the topic accepts, each with 32 KiB of headers.
// One worker (exactly-once) must put each in exactly one topic without
// stalling: the first in the output topic with its bytes unchanged (its
// headers and throttler's must fit the output topic's limit), the others
// in the dead-letter topic as too_large, cut to fit. It runs on kfake and
// on Apache Kafka, whose limits are the same.
func TestRecordsAtTheSizeLimit(t *testing.T) {
	OnBrokers(t, BothBrokers, RunRecordsAtTheSizeLimit)
}
