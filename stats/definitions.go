package stats

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	"github.com/throttler/throttler/flow"
)

// definitions holds what a View keeps of the records of kinds 2, 4 and 6,
// under the View's mutex. A budget's definition is kept whole (budgets)
// or, with DigestDefinitions, as the digest of its content (digests).
type definitions struct {
	budgets     map[string]BudgetDef
	digests     map[string]uint64
	digestOnly  bool
	seed        maphash.Seed
	buf         []byte // applyBudget's encoding of a digest (under the write lock)
	experiments map[expID]ExperimentDef
	workers     map[string]WorkerStatus // by worker
}

// appendContent appends the encoding of a budget's definition without
// who published it and when to buf: what two definitions of a budget are
// compared by.
func appendContent(buf []byte, b flow.Budget) ([]byte, error) {
	return appendBudgetDef(buf, BudgetDef{Budget: b})
}

// digest returns the digest of b's content, encoded into buf (grown and
// returned for the next call); ok is false when b cannot be encoded.
func (d *definitions) digest(buf []byte, b flow.Budget) (h uint64, ok bool, grown []byte) {
	v, err := appendContent(buf[:0], b)
	if err != nil || !validKeyName(b.Name) { // as EncodeBudgetDef's key would fail
		return 0, false, v
	}
	return maphash.Bytes(d.seed, v), true, v
}

// shows reports whether b's definition is held as it is.
func (d *definitions) shows(b flow.Budget) bool {
	if d.digestOnly {
		var buf [128]byte
		h, okB, _ := d.digest(buf[:0], b)
		cur, ok := d.digests[b.Name]
		return ok && okB && cur == h
	}
	cur, ok := d.budgets[b.Name]
	if !ok {
		return false
	}
	mine, err1 := appendContent(nil, b)
	theirs, err2 := appendContent(nil, cur.Budget)
	return err1 == nil && err2 == nil && bytes.Equal(mine, theirs)
}

type expID struct{ layer, experiment string }

func (d *definitions) apply(r *Record) {
	d.init()
	switch r.Kind {
	case KindBudget:
		d.applyBudget(&r.Budget, r.Deleted)
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

func (d *definitions) init() {
	if d.budgets == nil {
		d.budgets = map[string]BudgetDef{}
		d.digests = map[string]uint64{}
		d.experiments = map[expID]ExperimentDef{}
		d.workers = map[string]WorkerStatus{}
	}
}

// applyBudget applies a budget definition record, or its tombstone.
func (d *definitions) applyBudget(b *BudgetDef, deleted bool) {
	d.init()
	name := b.Budget.Name
	switch {
	case deleted:
		delete(d.budgets, name)
		delete(d.digests, name)
	case d.digestOnly:
		var h uint64
		var ok bool
		if h, ok, d.buf = d.digest(d.buf, b.Budget); ok {
			d.digests[name] = h
		} else {
			delete(d.digests, name)
		}
	default:
		d.budgets[name] = *b
	}
}

// BudgetDefs returns the newest published definition of every budget,
// sorted by name; with DigestDefinitions, none.
func (v *View) BudgetDefs() []BudgetDef {
	v.mu.RLock()
	out := values(v.defs.budgets)
	v.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Budget.Name < out[j].Budget.Name })
	return out
}

// BudgetNames returns the names of the budgets BudgetDefs returns, in no
// order: a walk that looks each up (BudgetDef) copies a string header a
// budget instead of a definition, and sorts only when it needs an order.
func (v *View) BudgetNames() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make([]string, 0, len(v.defs.budgets))
	for name := range v.defs.budgets {
		out = append(out, name)
	}
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

// HasBudgetDef reports whether a definition of budget is published (and
// not deleted since).
func (v *View) HasBudgetDef(budget string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, whole := v.defs.budgets[budget]
	_, digest := v.defs.digests[budget]
	return whole || digest
}

// ShowsBudget reports whether the newest published definition of b's
// budget has b's content (whoever published it and when are not
// compared); it implements DefinitionSource.
func (v *View) ShowsBudget(b flow.Budget) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.defs.shows(b)
}

// BudgetDef returns the newest published definition of budget; with
// DigestDefinitions, none.
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
