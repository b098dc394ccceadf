package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
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

// TestLedgerForgetsEndedPeriods: once a period budget's period ended (and
// StaleAfter more), its owners forget the counters of that period, and
// the stats topic's View holds no entry of it; a window budget's counters
// stay. Events of the budget's next period count from zero, exactly.
func TestLedgerForgetsEndedPeriods(t *testing.T) {
	env := newTestEnv(t)
	clock := newTestClock(time.Minute, 20*time.Second)
	start := clock.Now()
	budgets := []flow.Budget{
		{Name: "cap", Target: 1e9, Period: time.Minute},
		{Name: "win", Target: 1e9, Begin: start.Add(-time.Hour), End: start.Add(time.Hour)},
	}
	events := func(first, n int, budget string) []*kgo.Record {
		var recs []*kgo.Record
		for i := first; i < first+n; i++ {
			k := fmt.Sprintf("k%d", i)
			recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(k), Value: []byte(fmt.Sprintf(`{"id":%d,"budget":%q,"user":%q}`, i, budget, k))})
		}
		return recs
	}
	env.produce(append(events(0, 600, "cap"), events(600, 600, "win")...))
	env.startExperimentWorker(t, "w", budgets, WithClock(clock.Now))
	env.waitCommitted("events")

	view, err := stats.NewView(context.Background(), "stats", []kgo.Opt{kgo.SeedBrokers(env.addrs...)})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	totals := func(budget string) stats.BudgetTotals {
		tot, _ := view.Totals(budget)
		return tot
	}
	testwait.Eventually(t, "the View to count the events of both budgets", func() bool {
		return totals("cap").Total.Offered == 600 && totals("win").Total.Offered == 600
	})
	if n := totals("cap").Sources; n < 2 {
		t.Fatalf("cap counted on %d sources, want several", n)
	}

	// To the next period's fifth second: cap's counters are of a period
	// that ended 5 s ago or more, and the steps below have most of a
	// period before the next one ends.
	now := clock.Now()
	clock.Jump(now.Truncate(time.Minute).Add(time.Minute + 5*time.Second).Sub(now))
	testwait.Eventually(t, "the counters of cap's ended period to be forgotten", func() bool {
		_, ok := view.Totals("cap")
		return !ok
	})
	if tot := totals("win"); tot.Total.Offered != 600 || tot.Total.Passed != 600 {
		t.Fatalf("win after cap's counters were forgotten: %+v", tot)
	}
	for src, st := range env.ledgers() {
		for _, r := range st.Reports {
			if r.Budget == "cap" {
				t.Fatalf("the ledger of %s still holds cap: %+v", src, r)
			}
		}
	}

	env.produce(events(1200, 300, "cap"))
	env.waitCommitted("events")
	testwait.Eventually(t, "the View to count cap's new period from zero", func() bool {
		tot := totals("cap")
		return tot.Total.Offered == 300 && tot.InPeriod.Offered == 300 && tot.InPeriod.Passed == 300
	})
}
