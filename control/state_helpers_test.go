package control

import (
	"sort"

	"github.com/throttler/throttler/flow"
)

// The whole set of budgets in force, which the worker never needs (it
// applies a Batch's Changes) but these tests compare against.

// bases holds the base of each State newState made, in order.
var bases = map[*State][]flow.Budget{}

// newState returns a State whose base is the budgets base, in order, and
// never changes (as a flow tree the tests do not apply the changes to).
func newState(base []flow.Budget) *State {
	s := NewState(func(name string) (flow.Budget, bool) {
		for _, b := range base {
			if b.Name == name {
				return b, true
			}
		}
		return flow.Budget{}, false
	})
	bases[s] = base
	return s
}

// budgets returns the budgets in force. It costs O(budgets).
func (s *State) budgets() []flow.Budget { return s.overlay(nil) }

// budgets returns the whole set of budgets the batch would leave in force.
func (b *Batch) budgets() []flow.Budget { return b.s.overlay(b.records) }

// apply takes in one record r, with try judging the whole set of budgets
// it would give: ApplyBatch of r alone.
func (s *State) apply(r Record, try func([]flow.Budget) error) (accepted []Record, waiting map[string]error) {
	return s.ApplyBatch([]Record{r}, func(b *Batch) error { return try(b.budgets()) })
}

// overlay returns the budgets in force once the records of over are
// accepted: the base in order, then the added budgets by name.
func (s *State) overlay(over map[string]Record) []flow.Budget {
	base := bases[s]
	inBase := make(map[string]bool, len(base))
	for _, b := range base {
		inBase[b.Name] = true
	}
	out := make([]flow.Budget, 0, len(base)+len(s.accepted)+len(over))
	for _, b := range base {
		if a, ok := s.after(b.Name, over); ok {
			out = append(out, a)
		}
	}
	var added []flow.Budget
	addFrom := func(rs map[string]Record, skip map[string]Record) {
		for name, r := range rs {
			if inBase[name] || r.Op != OpSet {
				continue
			}
			if _, replaced := skip[name]; !replaced {
				added = append(added, r.Budget.Flow())
			}
		}
	}
	addFrom(s.accepted, over)
	addFrom(over, nil)
	sort.Slice(added, func(i, j int) bool { return added[i].Name < added[j].Name })
	return append(out, added...)
}
