package pacing

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// Three in-process workers share one budget; their stats views (the
// readers of the stats topic) reach the broker through a fault proxy,
// everything else directly. The stats exchange is stalled for 8 sync
// intervals (connections held, no byte forwarded), restored, then cut for 8
// more (connections closed and refused). Meanwhile the workers keep
// deciding on local estimates: the passes made while it is down stay within
// 1.1× of the ideal passes of that time, and the budget ends within 1.1× of
// its target. After each restore every worker's estimate of the cluster's
// passes comes back, in at most 3 sync intervals, within 1% of the target
// (or 1.5× the error it had before the trouble, if larger) of the truth at
// the estimate's instant (its snapshot's, the tuner's last visit).
// It runs on kfake and on Apache Kafka.
func TestStatsExchangeTrouble(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s run")
	}
	t.Parallel() // independent of the other long runs: its own broker, or names of its own
	OnBrokers(t, BothBrokers, RunStatsExchangeTrouble)
}
