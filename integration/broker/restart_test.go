package broker

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// The broker, with a data dir, is stopped mid-run with SIGTERM and
// restarted on the same port, twice (or SIGKILLed: see RunBrokerRestart);
// on Apache Kafka it is a cluster of three nodes, of which the first and
// then the second is restarted. Three exactly-once
// workers and the load generator ride both out: none exits, every input id
// ends up in exactly one output topic, the counted passes equal the output
// and the budget is not overspent by more than 0.5%.
//
// It runs on kfake and on Apache Kafka.
func TestBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker
	OnBrokers(t, BothBrokers, RunBrokerRestart)
}
