package consumer

import (
	"fmt"
	"strconv"
	"time"

	"github.com/throttler/throttler/flow"
)

// budgetTable maps budget names to the indices partitions keep their lanes
// and counters by. Indices are stable: a table only ever grows (a deleted
// budget keeps its index, marked dead, and gets it back if re-added), so a
// counter or lane indexed under an older table still means the same
// budget. A table is immutable; the worker swaps a new one in atomically
// when the budgets change, and each partition picks it up at the start of
// a batch.
type budgetTable struct {
	names []string
	live  []bool
	byNam map[string]int // live names only
}

func newBudgetTable(names []string) (*budgetTable, error) {
	t := &budgetTable{byNam: make(map[string]int, len(names))}
	for _, b := range names {
		if _, dup := t.byNam[b]; dup {
			return nil, &ConfigError{Option: "budgets", Reason: "duplicate budget " + strconv.Quote(b)}
		}
		t.byNam[b] = len(t.names)
		t.names = append(t.names, b)
		t.live = append(t.live, true)
	}
	return t, nil
}

// with returns a table whose live budgets are names; earlier names keep
// their indices.
func (t *budgetTable) with(names []string) *budgetTable {
	n := &budgetTable{
		names: append([]string(nil), t.names...),
		live:  make([]bool, len(t.names), len(t.names)+len(names)),
		byNam: make(map[string]int, len(names)),
	}
	all := make(map[string]int, len(t.names))
	for i, b := range t.names {
		all[b] = i
	}
	for _, b := range names {
		i, ok := all[b]
		if !ok {
			i = len(n.names)
			n.names = append(n.names, b)
			n.live = append(n.live, false)
		}
		n.live[i] = true
		n.byNam[b] = i
	}
	return n
}

// index returns the index of live budget b, or -1. A few names are
// compared one by one, faster than hashing.
func (t *budgetTable) index(b string) int {
	if len(t.names) <= 8 {
		for i, n := range t.names {
			if n == b && t.live[i] {
				return i
			}
		}
		return -1
	}
	if i, ok := t.byNam[b]; ok {
		return i
	}
	return -1
}

// liveNames returns the live budgets, in index order.
func (t *budgetTable) liveNames() []string {
	out := make([]string, 0, len(t.byNam))
	for i, b := range t.names {
		if t.live[i] {
			out = append(out, b)
		}
	}
	return out
}

// UpdateBudgets changes the budgets of the running worker: the flow tree
// is updated (see flow.Tree.Update: a changed budget keeps its counters),
// events may name the new budgets, and events naming a deleted one go to
// the dead-letter topic as of unknown budget. Every partition applies the
// change at the start of its next batch. On an error nothing changes.
func (w *Worker) UpdateBudgets(budgets []flow.Budget) (flow.Changes, error) {
	w.budgetMu.Lock()
	defer w.budgetMu.Unlock()
	inSet := make(map[string]bool, len(budgets))
	for _, b := range budgets {
		inSet[b.Name] = true
	}
	for _, l := range w.cfg.variantLimits {
		if !inSet[l.Budget] {
			return flow.Changes{}, &flow.BudgetError{Budget: l.Budget, Field: "name", Reason: "the limit of variant " + l.Layer + "/" + l.Experiment + "/" + l.Variant + " cannot be deleted"}
		}
	}
	delay := map[string]bool{}
	for _, b := range budgets {
		delay[b.Name] = b.Delay
	}
	for _, b := range budgets {
		if delay[b.Parent] {
			return flow.Changes{}, &flow.BudgetError{Budget: b.Name, Field: "parent", Reason: fmt.Sprintf("%q is a delay budget, which cannot be a parent", b.Parent)}
		}
		if b.Rewards && len(w.cfg.topics.Rewards) == 0 {
			return flow.Changes{}, &flow.BudgetError{Budget: b.Name, Field: "kind", Reason: "a rewards budget needs reward topics, and this worker reads none"}
		}
		if b.Scored && !w.scored {
			return flow.Changes{}, &flow.BudgetError{Budget: b.Name, Field: "scored", Reason: "a scored budget needs a score (fields.score or fields.score_expr), and this worker reads none"}
		}
	}
	ch, err := w.tree.Update(budgets, w.cfg.now())
	if err != nil || ch.Empty() {
		return ch, err
	}
	names := make([]string, 0, len(budgets))
	for _, b := range budgets {
		if !w.limitBudget(b.Name) { // events do not name a variant's limit
			names = append(names, b.Name)
		}
	}
	w.budgetTab.Store(w.budgetTab.Load().with(names))
	return ch, nil
}

// follow brings the partition's lanes and budget table up to date with
// the worker's, at the start of a batch: one atomic load each when
// nothing changed.
func (p *partition) follow(now time.Time) {
	tab := p.w.budgetTab.Load()
	if !p.src.Refresh(now, p.committed.Report) && tab == p.tab {
		return
	}
	p.tab = tab
	p.ev.budgets = tab
	p.counts.grow(len(tab.names))
	p.relane()
}

// relane indexes the source's lanes by the partition's budget table.
func (p *partition) relane() {
	p.lanes = p.lanes[:0]
	p.deciders = p.deciders[:0]
	for i, b := range p.tab.names {
		var l *flow.Lane
		if p.tab.live[i] {
			l = p.src.Lane(b)
		}
		p.lanes = append(p.lanes, l)
		if l == nil {
			p.deciders = append(p.deciders, nil)
		} else {
			p.deciders = append(p.deciders, l)
		}
	}
	p.limitLanes = p.limitLanes[:0]
	for _, l := range p.w.cfg.variantLimits {
		p.limitLanes = append(p.limitLanes, p.src.Lane(l.Budget))
	}
}

// grow makes room for the counters of n budgets.
func (c *counts) grow(n int) {
	for len(c.offered) < n {
		c.offered = append(c.offered, 0)
		c.passed = append(c.passed, 0)
		c.rewards = append(c.rewards, 0)
	}
}

// limitBudget reports whether budget is the limit of a variant.
func (w *Worker) limitBudget(budget string) bool {
	for _, l := range w.cfg.variantLimits {
		if l.Budget == budget {
			return true
		}
	}
	return false
}
