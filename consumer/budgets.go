package consumer

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/pipeline"
)

// UpdateBudgets replaces the budgets of the running worker with budgets:
// the flow tree is updated (see flow.Tree.Update: a changed budget keeps
// its counters), events may name the new budgets, and events naming a
// deleted one go to the dead-letter topic as of unknown budget. Every
// partition applies the change at the start of its next batch. On an error
// nothing changes. It costs O(len(budgets)); ApplyBudgets costs what
// changes.
func (w *Worker) UpdateBudgets(budgets []flow.Budget) (flow.Changes, error) {
	w.budgetMu.Lock()
	defer w.budgetMu.Unlock()
	inSet := make(map[string]bool, len(budgets))
	for _, b := range budgets {
		inSet[b.Name] = true
		if err := w.checkBudget(b); err != nil {
			return flow.Changes{}, err
		}
	}
	for _, l := range w.cfg.variantLimits {
		if !inSet[l.Budget] {
			return flow.Changes{}, w.limitDeleted(l.Budget)
		}
	}
	ch, err := w.tree.Update(budgets, w.cfg.now())
	if err == nil {
		w.changed(ch)
	}
	return ch, err
}

// ApplyBudgets changes some of the running worker's budgets (see
// flow.Tree.Apply), in O(len(changes)): the budgets the changes name are
// added, replaced or deleted, the others stay. Otherwise as UpdateBudgets.
func (w *Worker) ApplyBudgets(changes []flow.Change) (flow.Changes, error) {
	w.budgetMu.Lock()
	defer w.budgetMu.Unlock()
	for _, c := range changes {
		if c.Delete {
			if w.limits[c.Budget.Name] {
				return flow.Changes{}, w.limitDeleted(c.Budget.Name)
			}
			continue
		}
		if err := w.checkBudget(c.Budget); err != nil {
			return flow.Changes{}, err
		}
	}
	ch, err := w.tree.Apply(changes, w.cfg.now())
	if err == nil {
		w.changed(ch)
	}
	return ch, err
}

// checkBudget checks what the worker can run of a budget; the flow tree
// checks the rest.
func (w *Worker) checkBudget(b flow.Budget) error {
	switch {
	case b.Rewards && len(w.cfg.topics.Rewards) == 0:
		return &flow.BudgetError{Budget: b.Name, Field: "kind", Reason: "a rewards budget needs reward topics, and this worker reads none"}
	case b.Scored && !w.scored:
		return &flow.BudgetError{Budget: b.Name, Field: "scored", Reason: "a scored budget needs a score (fields.score or fields.score_expr), and this worker reads none"}
	}
	return nil
}

func (w *Worker) limitDeleted(budget string) error {
	for _, l := range w.cfg.variantLimits {
		if l.Budget == budget {
			return &flow.BudgetError{Budget: budget, Field: "name", Reason: fmt.Sprintf("the limit of variant %s/%s/%s cannot be deleted", l.Layer, l.Experiment, l.Variant)}
		}
	}
	return nil
}

// changed follows a change of the tree's budgets: their definitions are
// published (at the next commits), and the deleted ones leave every owned
// partition's ledger. It costs O(changes × owned partitions).
func (w *Worker) changed(ch flow.Changes) {
	if ch.Empty() {
		return
	}
	w.defs.budgetsChanged(ch)
	for _, name := range append(ch.Added, ch.Changed...) {
		if b, ok := w.tree.Budget(name); ok && b.Delay && (w.shortestDelay.Load() == 0 || int64(b.Period) < w.shortestDelay.Load()) {
			w.shortestDelay.Store(int64(b.Period))
		}
	}
	if len(ch.Deleted) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.parts {
		p.drops.add(ch.Deleted)
	}
}

// setLanes tells the partition's stages how to find their lanes: opened
// on demand from the partition's flow source (restored from its ledger).
func (p *partition) setLanes() {
	src, w := p.src, p.w
	p.part.SetLanes(func(budget string, now time.Time) pipeline.Decider {
		if w.limits[budget] {
			return nil // events do not name a variant's limit
		}
		return decider(src.Get(bytesconv.Bytes(budget), now))
	}, func(budget string, now time.Time) pipeline.Decider {
		return decider(src.Get(bytesconv.Bytes(budget), now))
	})
}

// eventLane returns the lane of a budget an event names, nil for a budget
// the worker does not have or a variant's limit.
func (p *partition) eventLane(budget string, now time.Time) *flow.Lane {
	if p.w.limits[budget] {
		return nil
	}
	return p.src.Get(bytesconv.Bytes(budget), now)
}

// decider returns l as a Decider, nil (not a nil *flow.Lane) when l is.
func decider(l *flow.Lane) pipeline.Decider {
	if l == nil {
		return nil
	}
	return l
}

// follow brings the partition's lanes up to date with the tree at the
// start of a batch: one atomic load when nothing changed.
func (p *partition) follow(now time.Time) {
	if p.src.Refresh(now, nil) {
		p.part.Invalidate() // lanes the stages keep may be closed
	}
}

// release closes the lanes idle for the worker's lane idle span whose
// counters are committed (flow.Source.Release); their next event opens
// them again from the ledger. The partition must be idle.
func (p *partition) release(now time.Time) {
	if p.src.Release(now, p.w.cfg.laneIdle) > 0 {
		p.part.Invalidate()
	}
}
