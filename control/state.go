package control

import (
	"sort"

	"github.com/throttler/throttler/flow"
)

// State is the set of budgets in force on a worker: the config file's
// budgets (the base) overlaid with the control records accepted so far.
//
// Precisely: for each budget name, the newest accepted record wins. A
// definition replaces the base budget of that name or adds one; a deletion
// removes the budget; a reset (tombstone) removes the record, so the base
// holds again. Base budgets keep their order; added ones follow, by name.
//
// A record is accepted only if the whole resulting set is valid, as the
// caller's try function judges (the worker's: the flow tree's rules plus
// what the worker can run). A record that is not — a parent that does not
// exist yet, a cycle, the deletion of a budget that is still a parent —
// waits: its budget stays as it was, and the record is tried again after
// every record that is accepted, until a newer record of the same name
// replaces it. A record that cannot be decoded never reaches State.
//
// Not safe for concurrent use.
type State struct {
	base     []flow.Budget
	accepted map[string]Record
	waiting  []Record // in arrival order, one per name
}

// NewState returns the state of base budgets with no control record.
func NewState(base []flow.Budget) *State {
	return &State{base: append([]flow.Budget(nil), base...), accepted: map[string]Record{}}
}

// Budgets returns the budgets in force.
func (s *State) Budgets() []flow.Budget { return s.overlay(Record{}) }

// overlay returns the base with the accepted records applied, and with r
// in place of the accepted record of its name (when r.Name is set).
func (s *State) overlay(r Record) []flow.Budget {
	rec := func(name string) (Record, bool) {
		if r.Name == name {
			return r, true
		}
		a, ok := s.accepted[name]
		return a, ok
	}
	out := make([]flow.Budget, 0, len(s.base)+len(s.accepted)+1)
	inBase := make(map[string]bool, len(s.base))
	for _, b := range s.base {
		inBase[b.Name] = true
		a, ok := rec(b.Name)
		switch {
		case !ok || a.Op == OpReset:
			out = append(out, b)
		case a.Op == OpSet:
			out = append(out, a.Budget.Flow())
		}
	}
	var added []flow.Budget
	for name, a := range s.accepted {
		if name != r.Name && !inBase[name] && a.Op == OpSet {
			added = append(added, a.Budget.Flow())
		}
	}
	if r.Name != "" && !inBase[r.Name] && r.Op == OpSet {
		added = append(added, r.Budget.Flow())
	}
	sort.Slice(added, func(i, j int) bool { return added[i].Name < added[j].Name })
	return append(out, added...)
}

// Apply takes in record r: it calls try with the set of budgets that
// accepting r would give, and accepts r when try returns nil; then it
// retries the records that wait. It returns the records accepted by this
// call, in order, and what still waits with the reason try gave, by name.
func (s *State) Apply(r Record, try func([]flow.Budget) error) (accepted []Record, waiting map[string]error) {
	for i, w := range s.waiting {
		if w.Name == r.Name {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			break
		}
	}
	s.waiting = append(s.waiting, r)
	waiting = map[string]error{}
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(s.waiting); i++ {
			w := s.waiting[i]
			if err := try(s.overlay(w)); err != nil {
				waiting[w.Name] = err
				continue
			}
			delete(waiting, w.Name)
			if w.Op == OpReset {
				delete(s.accepted, w.Name)
			} else {
				s.accepted[w.Name] = w
			}
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			i--
			accepted = append(accepted, w)
			progress = true
		}
	}
	return accepted, waiting
}
