package delay

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// Three `throttler run` processes share a delay budget of 1000 events per
// second while the load generator writes 3000 per second: the backlog grows
// and nothing is rejected. Over one minute of steady group membership the
// output topic (read_committed) must gain within 2% of 1000 per second, and
// the rejected topic must stay empty. It runs on kfake and on Apache
// Kafka.
func TestDelayBudgetThreeWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 75 s run across processes")
	}
	OnBrokers(t, BothBrokers, RunDelayBudget)
}
