package flow

import (
	"fmt"
	"sort"
)

// def is the tree's entry for one budget: its definition and, while a
// source of this node has a lane of it, its controller. Every field is
// guarded by the tree's mutex.
type def struct {
	b      Budget
	parent *def
	kids   int32       // budgets naming this one as their parent
	ctrl   *Controller // nil while no lane of the budget is open here
	// insertion order, for Budgets
	prev, next *def
	mark       uint64 // Budgets' walk
}

// defTable holds the definitions of every budget of a tree: a map, one
// entry per budget, in insertion order, and a bounded log of the names
// each version changed (which sources follow, see Source.Refresh).
type defTable struct {
	byName     map[string]*def
	head, tail *def
	version    uint64
	log        []logEntry // ascending versions
	logBase    uint64     // every change after this version is in log
	marks      uint64
}

type logEntry struct {
	version uint64
	name    string
}

// maxLog bounds the change log: a source more than maxLog changes behind
// re-checks all of its lanes instead.
const maxLog = 4096

func (d *defTable) get(name string) *def { return d.byName[name] }

func (d *defTable) len() int { return len(d.byName) }

func (d *defTable) insert(x *def) {
	if d.byName == nil {
		d.byName = map[string]*def{}
	}
	d.byName[x.b.Name] = x
	x.prev = d.tail
	if d.tail != nil {
		d.tail.next = x
	} else {
		d.head = x
	}
	d.tail = x
}

func (d *defTable) remove(x *def) {
	delete(d.byName, x.b.Name)
	if x.prev != nil {
		x.prev.next = x.next
	} else {
		d.head = x.next
	}
	if x.next != nil {
		x.next.prev = x.prev
	} else {
		d.tail = x.prev
	}
	x.prev, x.next = nil, nil
}

// logged records that version changed budget name, and trims the log.
func (d *defTable) logged(name string) {
	d.log = append(d.log, logEntry{d.version, name})
	if len(d.log) <= 2*maxLog {
		return
	}
	cut := d.log[len(d.log)-maxLog].version // drop whole versions only
	i := sort.Search(len(d.log), func(i int) bool { return d.log[i].version > cut })
	d.logBase = cut
	d.log = append(d.log[:0], d.log[i:]...)
}

// since returns the names changed after version v, and false when the log
// no longer reaches back that far.
func (d *defTable) since(v uint64) ([]logEntry, bool) {
	if v < d.logBase {
		return nil, false
	}
	i := sort.Search(len(d.log), func(i int) bool { return d.log[i].version > v })
	return d.log[i:], true
}

// budgets returns every definition, parents before children, in insertion
// order otherwise.
func (d *defTable) budgets() []Budget {
	out := make([]Budget, 0, len(d.byName))
	d.each(func(b *Budget) { out = append(out, *b) })
	return out
}

// each calls fn with every definition, parents before their children.
func (d *defTable) each(fn func(*Budget)) {
	d.marks++
	var visit func(x *def)
	visit = func(x *def) {
		if x.mark == d.marks {
			return
		}
		x.mark = d.marks
		if x.parent != nil {
			visit(x.parent)
		}
		fn(&x.b)
	}
	for x := d.head; x != nil; x = x.next {
		visit(x)
	}
}

// Change is one edit of a tree's budgets, for Tree.Apply: Budget is added,
// or replaces the budget of the same name; with Delete, the budget named
// Budget.Name is deleted (its other fields are ignored).
type Change struct {
	Budget Budget
	Delete bool
}

// batch is a set of changes being validated: their names, and what each
// makes of its budget.
type batch struct {
	d     *defTable
	at    map[string]int // name → index in cs
	cs    []Change
	delta map[string]int32 // change of each budget's child count
}

// check validates changes against the table as a whole: the result must
// be a valid set of budgets (each budget's fields, parents that exist and
// form no cycle, no deleted budget left with children, no delay budget as
// a parent). It costs O(len(changes) × depth).
func (d *defTable) check(cs []Change) error {
	bt := &batch{d: d, at: make(map[string]int, len(cs)), cs: cs, delta: map[string]int32{}}
	for i, c := range cs {
		name := c.Budget.Name
		if _, dup := bt.at[name]; dup {
			return &BudgetError{Budget: name, Field: "name", Reason: "changed twice in one batch"}
		}
		bt.at[name] = i
		old := d.get(name)
		switch {
		case c.Delete && old == nil:
			return &BudgetError{Budget: name, Field: "name", Reason: "no such budget to delete"}
		case !c.Delete:
			if err := validateBudget(c.Budget); err != nil {
				return err
			}
		}
		if old != nil && old.parent != nil {
			bt.delta[old.parent.b.Name]--
		}
		if !c.Delete && c.Budget.Parent != "" {
			bt.delta[c.Budget.Parent]++
		}
	}
	for _, c := range cs {
		if err := bt.checkOne(c); err != nil {
			return err
		}
	}
	return bt.checkDepth()
}

// checkDepth checks that no budget nests deeper than MaxDepth after the
// batch. A changed budget's own depth costs a walk up (at most MaxDepth
// steps); when a changed budget has children, which it may move down with
// it, every budget's depth is computed once: O(budgets).
func (bt *batch) checkDepth() error {
	deep := false
	for _, c := range bt.cs {
		if c.Delete {
			continue
		}
		if n := bt.depthOf(c.Budget.Name, nil); n > MaxDepth {
			return depthError(c.Budget.Name, n)
		}
		deep = deep || bt.kids(c.Budget.Name) > 0
	}
	if !deep {
		return nil
	}
	memo := make(map[string]int, bt.d.len()+len(bt.cs))
	for name := range bt.d.byName {
		if n := bt.depthOf(name, memo); n > MaxDepth {
			return depthError(name, n)
		}
	}
	return nil
}

// depthOf returns the depth of budget name after the batch (1 for a root),
// or MaxDepth+1 when it is deeper than MaxDepth; memo, if not nil, keeps
// the depths found. The parents form no cycle (checkOne), and the walk
// stops past MaxDepth in any case.
func (bt *batch) depthOf(name string, memo map[string]int) int {
	var walk []string
	n := 0
	for name != "" && n <= MaxDepth {
		if d, ok := memo[name]; ok {
			n += d
			break
		}
		b, ok := bt.result(name)
		if !ok {
			break
		}
		walk = append(walk, name)
		n++
		name = b.Parent
	}
	if memo != nil {
		for i, w := range walk {
			memo[w] = n - i
		}
	}
	return min(n, MaxDepth+1)
}

// result returns what budget name is after the batch.
func (bt *batch) result(name string) (Budget, bool) {
	if i, ok := bt.at[name]; ok {
		return bt.cs[i].Budget, !bt.cs[i].Delete
	}
	if x := bt.d.get(name); x != nil {
		return x.b, true
	}
	return Budget{}, false
}

// kids returns how many budgets name budget name as their parent after the
// batch.
func (bt *batch) kids(name string) int32 {
	n := bt.delta[name]
	if x := bt.d.get(name); x != nil {
		n += x.kids
	}
	return n
}

func (bt *batch) checkOne(c Change) error {
	b := c.Budget
	if c.Delete {
		if n := bt.kids(b.Name); n > 0 {
			return &BudgetError{Budget: b.Name, Field: "name", Reason: fmt.Sprintf("cannot be deleted: %d budgets name it as their parent", n)}
		}
		return nil
	}
	if b.Delay {
		if n := bt.kids(b.Name); n > 0 {
			return &BudgetError{Budget: b.Name, Field: "delay", Reason: fmt.Sprintf("a delay budget cannot be a parent, and %d budgets name it as theirs", n)}
		}
	}
	if b.Parent == "" {
		return nil
	}
	p, ok := bt.result(b.Parent)
	switch {
	case !ok:
		return &BudgetError{Budget: b.Name, Field: "parent", Reason: fmt.Sprintf("no budget named %q", b.Parent)}
	case p.Delay:
		return &BudgetError{Budget: b.Name, Field: "parent", Reason: fmt.Sprintf("%q is a delay budget, which cannot be a parent", b.Parent)}
	}
	// The table is acyclic, so a cycle after the batch passes through a
	// changed budget: walk up from b until the root, b itself (a cycle), or
	// a changed budget met twice (a cycle that another change reports).
	seen := map[string]bool{}
	for name := b.Parent; name != ""; {
		if name == b.Name {
			return &BudgetError{Budget: b.Name, Field: "parent", Reason: "parents form a cycle"}
		}
		if i, ok := bt.at[name]; ok {
			if seen[name] || bt.cs[i].Delete {
				return nil // reported by that budget's own check
			}
			seen[name] = true
			name = bt.cs[i].Budget.Parent
			continue
		}
		x := bt.d.get(name)
		if x == nil {
			return nil // reported by the check of the budget naming it
		}
		name = x.b.Parent
	}
	return nil
}
