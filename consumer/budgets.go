package consumer

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
)

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
	w.budgetTab.Store(w.budgetTab.Load().With(names))
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
	p.counts.grow(len(tab.Names()))
	p.relane()
}

// relane indexes the source's lanes by the partition's budget table and
// hands them to the partition's stages.
func (p *partition) relane() {
	p.lanes = p.lanes[:0]
	deciders := make([]pipeline.Decider, 0, len(p.tab.Names()))
	for i, b := range p.tab.Names() {
		var l *flow.Lane
		if p.tab.Live(i) {
			l = p.src.Lane(b)
		}
		p.lanes = append(p.lanes, l)
		deciders = append(deciders, decider(l))
	}
	src := p.src
	p.part.SetLanes(p.tab, deciders, func(b string) pipeline.Decider { return decider(src.Lane(b)) })
}

// decider returns l as a Decider, nil (not a nil *flow.Lane) when l is.
func decider(l *flow.Lane) pipeline.Decider {
	if l == nil {
		return nil
	}
	return l
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
