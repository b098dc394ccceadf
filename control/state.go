package control

import (
	"slices"

	"github.com/throttler/throttler/flow"
)

// State is the set of budgets in force on a worker: the config file's
// budgets (the base) overlaid with the control records accepted so far.
//
// Precisely: for each budget name, the newest accepted record wins. A
// definition replaces the base budget of that name or adds one; a deletion
// removes the budget; a reset (tombstone) removes the record, so the base
// holds again.
//
// Records are taken in batches (ApplyBatch): a batch is accepted only if
// the whole resulting set is valid, as the caller's try function judges
// (the worker's: the flow tree's rules plus what the worker can run). A
// batch that is not is split until the records at fault stand alone; such
// a record — a parent that does not exist yet, a cycle, the deletion of a
// budget that is still a parent — waits: its budget stays as it was, and
// the record is tried again after every batch that accepts something,
// until a newer record of the same name replaces it. A record that cannot
// be decoded never reaches State.
//
// Cost: ApplyBatch costs O(records) plus the calls of try (one for a batch
// that is accepted whole; O(k log n) for k records at fault among n), and
// a Batch's Changes are O(its records); nothing is O(budgets). Nor is
// its memory: it holds the base definitions of the names records were
// tried for, not the base.
//
// Not safe for concurrent use.
type State struct {
	base     func(name string) (flow.Budget, bool)
	saved    map[string]baseDef // the base of each name a record was tried for
	accepted map[string]Record
	waiting  []Record // in arrival order, one per name
}

// baseDef is a name's base definition, or none (ok false).
type baseDef struct {
	b  flow.Budget
	ok bool
}

// NewState returns the state of the base budgets with no control record.
// base looks a budget up in the set the accepted records change (the
// worker's flow tree, Tree.Budget): for a name no record was accepted for,
// that set holds the base. State saves a name's base definition before it
// first tries a record of that name, so that a reset restores it.
func NewState(base func(name string) (flow.Budget, bool)) *State {
	return &State{base: base, saved: map[string]baseDef{}, accepted: map[string]Record{}}
}

// baseOf returns the base definition of name.
func (s *State) baseOf(name string) (flow.Budget, bool) {
	if d, ok := s.saved[name]; ok {
		return d.b, d.ok
	}
	return s.base(name)
}

// save records the base definitions of rs' names not saved yet, before
// records of them can be accepted.
func (s *State) save(rs []Record) {
	for _, r := range rs {
		if _, ok := s.saved[r.Name]; !ok {
			b, ok := s.base(r.Name)
			s.saved[r.Name] = baseDef{b, ok}
		}
	}
}

// Budget returns the budget of that name in force, if any, in O(1).
func (s *State) Budget(name string) (flow.Budget, bool) { return s.after(name, nil) }

// after returns the budget of name in force once the records of over (by
// name; nil for none) are accepted.
func (s *State) after(name string, over map[string]Record) (flow.Budget, bool) {
	r, ok := over[name]
	if !ok {
		r, ok = s.accepted[name]
	}
	if ok && r.Op == OpSet {
		return r.Budget.Flow(), true
	}
	if ok && r.Op == OpDelete {
		return flow.Budget{}, false
	}
	return s.baseOf(name)
}

// Change is one budget's change: its new definition, or its deletion
// (Delete, with only Budget.Name set). It has the shape of flow's
// incremental Tree.Apply change.
type Change struct {
	Budget flow.Budget
	Delete bool
}

// Batch is records tried together: what accepting them would change.
type Batch struct {
	s       *State
	records map[string]Record
	changes []Change
}

// Changes returns what accepting the batch changes, one change per budget
// whose definition it sets or removes (for an incremental update of a flow tree): a
// definition, a deletion of a budget in force, or a reset to the base's
// definition (or to none). A record that changes nothing (deleting a
// budget not in force) gives no change. O(records).
func (b *Batch) Changes() []Change { return b.changes }

func (s *State) batch(rs []Record) *Batch {
	b := &Batch{s: s, records: make(map[string]Record, len(rs))}
	for _, r := range rs {
		b.records[r.Name] = r
		if nb, ok := s.after(r.Name, b.records); ok {
			b.changes = append(b.changes, Change{Budget: nb})
		} else if _, was := s.Budget(r.Name); was {
			b.changes = append(b.changes, Change{Budget: flow.Budget{Name: r.Name}, Delete: true})
		}
	}
	return b
}

// ApplyBatch takes in the records rs, in the order they were read: of
// several records of one name only the last counts (it replaces the
// others, and any record of that name that waits). It tries them as one
// batch, splitting a batch that try refuses; then, if anything was
// accepted, it retries the records that wait. It returns the records
// accepted by this call, in the order they were accepted, and the records
// that still wait with the reason try gave, by name.
func (s *State) ApplyBatch(rs []Record, try func(*Batch) error) (accepted []Record, waiting map[string]error) {
	fresh := newestByName(rs)
	names := make(map[string]bool, len(fresh))
	for _, r := range fresh {
		names[r.Name] = true
	}
	s.waiting = slices.DeleteFunc(s.waiting, func(w Record) bool { return names[w.Name] })
	waiting = map[string]error{}
	accepted = s.settle(fresh, try, waiting, nil)
	for progress := len(accepted) > 0; progress && len(s.waiting) > 0; {
		older := s.waiting
		s.waiting = nil
		got := s.settle(older, try, waiting, nil)
		accepted = append(accepted, got...)
		progress = len(got) > 0
	}
	return accepted, waiting
}

// settle tries rs as one batch; a refused batch of several records is
// split in two halves, tried in turn; a refused record alone waits.
func (s *State) settle(rs []Record, try func(*Batch) error, waiting map[string]error, accepted []Record) []Record {
	if len(rs) == 0 {
		return accepted
	}
	s.save(rs)
	err := try(s.batch(rs))
	switch {
	case err == nil:
		for _, r := range rs {
			if r.Op == OpReset {
				delete(s.accepted, r.Name)
			} else {
				s.accepted[r.Name] = r
			}
			delete(waiting, r.Name)
		}
		return append(accepted, rs...)
	case len(rs) == 1:
		s.waiting = append(s.waiting, rs[0])
		waiting[rs[0].Name] = err
		return accepted
	}
	half := len(rs) / 2
	accepted = s.settle(rs[:half], try, waiting, accepted)
	return s.settle(rs[half:], try, waiting, accepted)
}

// newestByName returns the last record of each name in rs, in the order
// of those last records.
func newestByName(rs []Record) []Record {
	last := make(map[string]int, len(rs))
	for i, r := range rs {
		last[r.Name] = i
	}
	out := make([]Record, 0, len(last))
	for i, r := range rs {
		if last[r.Name] == i {
			out = append(out, r)
		}
	}
	return out
}
