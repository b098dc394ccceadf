package stats

import (
	"sort"
	"time"

	"github.com/throttler/throttler/flow"
)

// BudgetTotals are the cluster totals of one budget: sums over the sources
// the View holds for it (those whose counters are not zero).
type BudgetTotals struct {
	Budget  string
	Sources int
	// Newest and Oldest are the newest and the oldest of the sources'
	// instants (the At of their reports): Oldest far behind the
	// heartbeat interval means some owner is silent.
	Newest, Oldest time.Time
	Total          flow.Counters
	// Period is the newest period among the sources, InPeriod the sum of
	// the counters of the sources that report it.
	Period   int64
	InPeriod flow.Counters
}

// Totals returns the cluster totals of budget; false when the View holds no
// source of it. It costs O(sources of budget).
func (v *View) Totals(budget string) (BudgetTotals, bool) {
	v.mu.RLock()
	scratch := v.appendView(budget, nil)
	v.mu.RUnlock()
	if len(scratch) == 0 {
		return BudgetTotals{Budget: budget}, false
	}
	return sumReports(budget, scratch), true
}

func sumReports(budget string, rs []flow.Report) BudgetTotals {
	t := BudgetTotals{Budget: budget, Sources: len(rs), Newest: rs[0].At, Oldest: rs[0].At, Period: rs[0].Period}
	for _, r := range rs {
		if r.At.After(t.Newest) {
			t.Newest = r.At
		}
		if r.At.Before(t.Oldest) {
			t.Oldest = r.At
		}
		t.Period = max(t.Period, r.Period)
		t.Total.Offered += r.Total.Offered
		t.Total.Passed += r.Total.Passed
		t.Total.Rewards += r.Total.Rewards
	}
	for _, r := range rs {
		if r.Period == t.Period {
			t.InPeriod.Offered += r.InPeriod.Offered
			t.InPeriod.Passed += r.InPeriod.Passed
			t.InPeriod.Rewards += r.InPeriod.Rewards
		}
	}
	return t
}

// EachBudget calls fn with the totals of every budget whose name sorts
// after after ("" for all), in name order, until fn returns false: pages
// (after = the last name seen), prefixes and top-N lists cost what they
// visit, O(sources) per budget, and the sorted list is reused while the
// set of budgets does not change. fn runs without the View's lock held.
func (v *View) EachBudget(after string, fn func(BudgetTotals) bool) {
	names := v.sortedBudgets()
	var scratch []flow.Report
	for i := sort.SearchStrings(names, after); i < len(names); i++ {
		name := names[i]
		if name == after {
			continue
		}
		v.mu.RLock()
		scratch = v.appendView(name, scratch[:0])
		v.mu.RUnlock()
		if len(scratch) == 0 {
			continue // gone since the list was made
		}
		if !fn(sumReports(name, scratch)) {
			return
		}
	}
}
