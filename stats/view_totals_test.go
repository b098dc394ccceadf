package stats

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// TestEachBudget folds ledgers into a View (no broker) and pages through
// its budgets: sorted, after a name, stopping when asked, with the totals
// of the newest period.
func TestEachBudget(t *testing.T) {
	var recs []*kgo.Record
	for s, c := range []Changes{
		{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 1}, Period: 3, InPeriod: flow.Counters{Passed: 1}}, {Budget: "c", Total: flow.Counters{Passed: 5}}}},
		{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 2}, Period: 4, InPeriod: flow.Counters{Passed: 2}}, {Budget: "b", Total: flow.Counters{Offered: 1}}}},
		{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 4}, Period: 4, InPeriod: flow.Counters{Passed: 3, Rewards: 1.5}}}},
	} {
		r, err := newTestLedger(t, SourceName("events", int32(s))).Records(c, 1, t0.Add(-time.Duration(s)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r...)
	}
	v := foldAll(t, recs)
	var seen []BudgetTotals
	page := func(after string, limit int) {
		seen = seen[:0]
		v.EachBudget(after, func(bt BudgetTotals) bool {
			seen = append(seen, bt)
			return len(seen) < limit
		})
	}
	page("", 10)
	if len(seen) != 3 || seen[0].Budget != "a" || seen[1].Budget != "b" || seen[2].Budget != "c" {
		t.Fatalf("all budgets: %+v", seen)
	}
	a := seen[0]
	if a.Sources != 3 || a.Total.Passed != 7 || a.Period != 4 || a.InPeriod != (flow.Counters{Passed: 5, Rewards: 1.5}) ||
		!a.Newest.Equal(t0) || !a.Oldest.Equal(t0.Add(-2*time.Second)) {
		t.Fatalf("totals of a: %+v", a)
	}
	if got, ok := v.Totals("a"); !ok || got != a {
		t.Fatalf("Totals(a) = %+v, %v", got, ok)
	}
	page("a", 1)
	if len(seen) != 1 || seen[0].Budget != "b" {
		t.Fatalf("one after a: %+v", seen)
	}
	page("bb", 10)
	if len(seen) != 1 || seen[0].Budget != "c" {
		t.Fatalf("after bb: %+v", seen)
	}
	if _, ok := v.Totals("none"); ok {
		t.Fatal("totals of an unknown budget")
	}
}
