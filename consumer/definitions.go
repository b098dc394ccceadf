package consumer

import (
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// Definitions on the stats topic.
//
// The worker publishes the definitions it runs (budgets from its flow
// tree, experiments from its splitter and variant limits) that the stats
// view does not already show identically (stats.Publisher.
// DefinitionRecords), and tombstones those of the budgets it deletes: all
// of them once at start, then only those that change (UpdateBudgets,
// ApplyBudgets), never every sync interval. The records go in the
// commits' transactions, at most defsPerCommit budgets per commit, so
// that a first start with 100,000 budgets writes bounded transactions;
// each worker starts its walk at a place of its own (by its transactional
// id), and a definition another worker published meanwhile is left out,
// so workers starting together share the work.

// defsPerCommit bounds the budget definitions compared and written per
// commit.
const defsPerCommit = 1000

// defQueue is the definitions still to publish. It is fed by the
// goroutines that change budgets and taken by the poll loop's commits.
type defQueue struct {
	mu    sync.Mutex
	names []string // budgets to compare with the view, in order
	gone  []string // budgets deleted: tombstone their definitions
	exps  bool     // the experiments
}

// defsTaken is what one commit took from the queue.
type defsTaken struct {
	names, gone []string
	exps        bool
}

// start queues every definition of the worker: budgets starting at a
// place picked by id, and the experiments.
func (q *defQueue) start(tree *flow.Tree, id string) {
	names := make([]string, 0, tree.Len())
	tree.EachBudget(func(b *flow.Budget) { names = append(names, b.Name) })
	if len(names) > 0 {
		h := fnv.New32a()
		h.Write([]byte(id))
		off := int(h.Sum32() % uint32(len(names)))
		slices.Reverse(names[:off]) // a rotation by off, in place
		slices.Reverse(names[off:])
		slices.Reverse(names)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.names = append(q.names, names...)
	q.exps = true
}

// budgetsChanged queues the definitions of changed budgets.
func (q *defQueue) budgetsChanged(ch flow.Changes) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.names = append(append(q.names, ch.Added...), ch.Changed...)
	q.gone = append(q.gone, ch.Deleted...)
}

// due reports whether definitions wait.
func (q *defQueue) due() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.names)+len(q.gone) > 0 || q.exps
}

// take removes up to defsPerCommit budgets (and the experiments, and
// every deletion) from the queue.
func (q *defQueue) take() defsTaken {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.names), defsPerCommit)
	t := defsTaken{names: q.names[:n:n], gone: q.gone, exps: q.exps}
	q.names, q.gone, q.exps = q.names[n:], nil, false
	return t
}

// settle forgets what a committed unit took, or queues it again.
func (q *defQueue) settle(t defsTaken, committed bool) {
	if committed {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.names = append(t.names, q.names...)
	q.gone = append(t.gone, q.gone...)
	q.exps = q.exps || t.exps
}

// definitionRecords produces, in the current unit of work, the
// definitions taken from the queue that the view does not show as they
// are, and the tombstones of deleted budgets' definitions.
func (w *Worker) definitionRecords(now time.Time) defsTaken {
	if !w.defs.due() {
		return defsTaken{}
	}
	t := w.defs.take()
	budgets := make([]flow.Budget, 0, len(t.names))
	for _, name := range t.names {
		if b, ok := w.tree.Budget(name); ok { // not deleted since
			budgets = append(budgets, b)
		}
	}
	var exps []stats.ExperimentDef
	if t.exps {
		exps = w.experimentDefs()
	}
	recs, err := w.pub.DefinitionRecords(w.view, budgets, exps, w.cfg.txnID, now)
	if err != nil {
		w.log.Error().Err(err).Msg("encode definitions")
	}
	for _, r := range recs {
		w.produce(r)
	}
	for _, name := range t.gone {
		_, back := w.tree.Budget(name)
		if w.view.HasBudgetDef(name) && !back {
			if key, err := stats.BudgetKey(name); err == nil {
				w.produce(w.pub.TombstoneKey(key))
			}
		}
	}
	return t
}

// experimentDefs describes the splitter's experiments with the variants'
// limits.
func (w *Worker) experimentDefs() []stats.ExperimentDef {
	limits := map[routeKey]pipeline.VariantLimit{}
	for _, l := range w.cfg.variantLimits {
		limits[routeKey{l.Layer, l.Experiment, l.Variant}] = l
	}
	var out []stats.ExperimentDef
	for _, e := range w.cfg.splitter.Experiments() {
		d := stats.ExperimentDef{Layer: e.Layer, Experiment: e.Experiment}
		for _, v := range e.Variants {
			vd := stats.VariantDef{Name: v.Name, Weight: v.Share, Topic: v.Topic}
			if l, ok := limits[routeKey{e.Layer, e.Experiment, v.Name}]; ok {
				vd.Limit, vd.Fallback = l.Budget, l.Fallback
			}
			d.Variants = append(d.Variants, vd)
		}
		out = append(out, d)
	}
	return out
}
