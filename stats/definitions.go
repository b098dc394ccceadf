package stats

import (
	"slices"
	"sort"
	"strings"
)

// definitions holds what a View keeps of the records of kinds 2, 4 and 6,
// under the View's mutex.
type definitions struct {
	budgets     map[string]BudgetDef
	experiments map[expID]ExperimentDef
	workers     map[string]WorkerStatus // by worker
}

type expID struct{ layer, experiment string }

func (d *definitions) apply(r *Record) {
	if d.budgets == nil {
		d.budgets = map[string]BudgetDef{}
		d.experiments = map[expID]ExperimentDef{}
		d.workers = map[string]WorkerStatus{}
	}
	switch r.Kind {
	case KindBudget:
		if r.Deleted {
			delete(d.budgets, r.Budget.Budget.Name)
		} else {
			d.budgets[r.Budget.Budget.Name] = r.Budget
		}
	case KindExperiment:
		id := expID{r.Experiment.Layer, r.Experiment.Experiment}
		if r.Deleted {
			delete(d.experiments, id)
		} else {
			d.experiments[id] = r.Experiment
		}
	case KindWorker:
		if r.Deleted {
			delete(d.workers, r.Worker.Worker)
		} else {
			d.workers[r.Worker.Worker] = r.Worker
		}
	}
}

// BudgetDefs returns the newest published definition of every budget,
// sorted by name.
func (v *View) BudgetDefs() []BudgetDef {
	v.mu.RLock()
	out := values(v.defs.budgets)
	v.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Budget.Name < out[j].Budget.Name })
	return out
}

// ExperimentDefs returns the newest published definition of every
// experiment, sorted by layer and experiment.
func (v *View) ExperimentDefs() []ExperimentDef {
	v.mu.RLock()
	out := values(v.defs.experiments)
	v.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if c := strings.Compare(out[i].Layer, out[j].Layer); c != 0 {
			return c < 0
		}
		return out[i].Experiment < out[j].Experiment
	})
	return out
}

// VariantTotals returns the cluster-wide counts of one experiment's
// variants, by variant: the newest cumulative counts (events and keys) of
// every source, summed. sources is the number of sources that reported.
// It costs O(sources).
func (v *View) VariantTotals(layer, experiment string) (totals map[string]VariantCount, sources int) {
	totals = map[string]VariantCount{}
	vcs := v.VariantSources(layer, experiment)
	for _, vc := range vcs {
		for _, c := range vc.Counts {
			t := totals[c.Variant]
			t.Variant = c.Variant
			t.Count += c.Count
			t.Keys += c.Keys
			totals[c.Variant] = t
		}
	}
	return totals, len(vcs)
}

// VariantSources returns the newest variant counts of every source of one
// experiment, from the sources' ledgers, sorted by source. It costs
// O(sources).
func (v *View) VariantSources(layer, experiment string) []VariantCounts {
	id := ExperimentID{layer, experiment}
	v.mu.RLock()
	var out []VariantCounts
	for _, s := range v.led.sources {
		if e := s.exps[id]; e != nil {
			out = append(out, VariantCounts{Layer: layer, Experiment: experiment, Source: s.name, At: s.at, Counts: e.counts})
		}
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b VariantCounts) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// BudgetDef returns the newest published definition of budget.
func (v *View) BudgetDef(budget string) (BudgetDef, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, ok := v.defs.budgets[budget]
	return d, ok
}

// ExperimentDef returns the newest published definition of an experiment.
func (v *View) ExperimentDef(layer, experiment string) (ExperimentDef, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, ok := v.defs.experiments[expID{layer, experiment}]
	return d, ok
}

// values returns the values of m, in no particular order.
func values[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
