package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/stats"
)

// ledgers loads the committed ledger of every source from the stats topic
// "stats".
func (env *testEnv) ledgers() map[string]stats.LedgerState {
	env.t.Helper()
	return env.ledgersOf("stats")
}

// ledgersOf loads the committed ledger of every source from a stats topic.
func (env *testEnv) ledgersOf(topic string) map[string]stats.LedgerState {
	env.t.Helper()
	var sources []string
	for p := int32(0); p < inputPartitions; p++ {
		sources = append(sources, stats.SourceName("events", p))
	}
	for p := int32(0); p < 4; p++ {
		sources = append(sources, stats.SourceName("clicks", p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	states, err := stats.LoadLedgers(ctx, []kgo.Opt{kgo.SeedBrokers(env.addrs...)}, topic, sources...)
	if err != nil {
		env.t.Fatal(err)
	}
	return states
}

// TestLedgerLanesReleased runs events through a worker whose lanes are
// released after 300 ms without an event, then, once they were, more
// events: the ledgers still count exactly the outputs (lanes restored from
// them continue where they were). Meanwhile: the metric series of the
// budgets gone idle are deleted, and idle partitions vouch for their
// counters (heartbeats).
func TestLedgerLanesReleased(t *testing.T) {
	env := newTestEnv(t)
	const n = 2400
	recs, bad := eventRecords(0, n)
	env.produce(recs[:n/2])
	w := env.startWorker(t, "w", SyncInterval(100*time.Millisecond), CommitInterval(50*time.Millisecond),
		LaneIdle(300*time.Millisecond), SeriesIdle(time.Second))
	env.waitCommitted("events")
	if v, ok := gauge(t, w.w.Gatherer(), "throttler_passed_total", map[string]string{"budget": "a"}); !ok || v == 0 {
		t.Fatalf("passed_total of a: %v, %v", v, ok)
	}
	testwait.Eventually(t, "the idle lanes to be released, and their controllers dropped", func() bool {
		v, ok := gauge(t, w.w.Gatherer(), "throttler_open_lanes", nil)
		return ok && v == 0 && len(w.w.tree.Controllers()) == 0
	})
	testwait.Eventually(t, "the series of the idle budgets to be deleted", func() bool {
		_, a := gauge(t, w.w.Gatherer(), "throttler_passed_total", map[string]string{"budget": "a"})
		_, b := gauge(t, w.w.Gatherer(), "throttler_rejected_total", map[string]string{"budget": "b"})
		return !a && !b
	})
	idleSince := time.Now()
	testwait.Eventually(t, "an idle partition's heartbeat", func() bool {
		s, ok := w.w.view.Source("events/0")
		return ok && s.At.After(idleSince)
	})
	env.produce(recs[n/2:])
	env.waitCommitted("events")
	w.stop(t)
	env.verify(t, n, bad, 0, 0)
}
