package crash

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// Three workers of an exactly-once group and three of an at-least-once
// group consume the same input (12 partitions, zipf-skewed users, one
// budget in ten unknown so that it is dead-lettered, an experiment layer
// routing passes to two topics) while workers are SIGKILLed at seeded
// random moments and restarted, at least five times per group.
//
// Exactly-once: every input id ends up in exactly one output, experiment,
// rejected or dead-letter topic (read_committed), the passes counted in the
// stats topic and in the ledgers equal the passes in those topics, and
// the budget is overspent by at most 0.5%. At-least-once: no id is lost,
// and every duplicate is an event a killed worker had processed and not
// committed (suite/dupbound.go).
//
// THROTTLER_CRASH_SEED picks the schedule (default 1);
// THROTTLER_CRASH_BROKER_KILLS=n also SIGKILLs the broker n times. It runs
// on every kind of broker: kfake, and Apache Kafka with classic groups,
// KIP-848 groups and transactions v1.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker, or names of its own
	OnBrokers(t, EveryKind, RunCrashRecovery)
}
