package consumer

import (
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// Variant counts and definitions on the stats topic.
//
// Each input partition keeps the cumulative count of the events it routed
// to every variant (passed by their budget and assigned; a variant limit
// may then send them elsewhere): restored from the partition's checkpoint
// when the partition is opened, advanced at every commit from the counts
// of the records processed since, written in every checkpoint and, every
// sync interval, published to the stats topic (one record per layer x
// experiment x source) in the same transaction. A rebalance therefore
// neither loses nor double counts: the new owner continues from the
// committed counts, as it does for budgets.
//
// Every sync interval the worker also publishes the definitions it runs
// with (budgets from its flow tree, experiments from its splitter and
// variant limits) when they differ from what it last published, and a
// tombstone for a budget it published that is gone.

// variantState is an input partition's cumulative variant counts, owned by
// the partition's goroutine (or by the poll loop while the partition is
// idle).
type variantState struct {
	counts map[routeKey]stats.VariantCount // Variant unset
	snap   []stats.VariantCounts           // counts as of the last fold, grouped by experiment; shared, never modified

	seen       seenKeys
	keysRouted map[routeKey]uint64 // keys counted since the last fold
}

// restore sets the counts to those of a checkpoint.
func (s *variantState) restore(cp []stats.VariantCounts) {
	s.counts = make(map[routeKey]stats.VariantCount)
	for _, vc := range cp {
		for _, c := range vc.Counts {
			s.counts[routeKey{vc.Layer, vc.Experiment, c.Variant}] = stats.VariantCount{Count: c.Count, Keys: c.Keys}
		}
	}
	s.snap = cp
	s.seen.reset()
	clear(s.keysRouted)
}

// count counts an event routed to its assignments (passed by its budget),
// and its key if this is the key's first event here. routed are the
// partition's event counts since the last flush.
func (s *variantState) count(e *pipeline.Event, routed map[routeKey]uint64) {
	if len(e.Assignments) == 0 {
		return
	}
	fresh := s.seen.add(e.Fields.Key)
	if fresh && s.keysRouted == nil {
		s.keysRouted = make(map[routeKey]uint64)
	}
	for _, a := range e.Assignments {
		k := routeKey{a.Layer, a.Experiment, a.Variant}
		routed[k]++
		if fresh {
			s.keysRouted[k]++
		}
	}
}

// fold adds routed counts and rebuilds the snapshot; it reports whether
// anything changed.
func (s *variantState) fold(routed map[routeKey]uint64) bool {
	// routed holds every variant keysRouted does: a counted key is a
	// counted event.
	if len(routed) == 0 {
		return false
	}
	if s.counts == nil {
		s.counts = make(map[routeKey]stats.VariantCount)
	}
	for k, n := range routed {
		c := s.counts[k]
		c.Count += n
		c.Keys += s.keysRouted[k]
		s.counts[k] = c
	}
	clear(s.keysRouted)
	type exp struct{ layer, experiment string }
	by := map[exp][]stats.VariantCount{}
	for k, c := range s.counts {
		e := exp{k.layer, k.experiment}
		c.Variant = k.variant
		by[e] = append(by[e], c)
	}
	snap := make([]stats.VariantCounts, 0, len(by))
	for e, cs := range by {
		slices.SortFunc(cs, func(a, b stats.VariantCount) int { return strings.Compare(a.Variant, b.Variant) })
		snap = append(snap, stats.VariantCounts{Layer: e.layer, Experiment: e.experiment, Counts: cs})
	}
	slices.SortFunc(snap, func(a, b stats.VariantCounts) int {
		if c := strings.Compare(a.Layer, b.Layer); c != 0 {
			return c
		}
		return strings.Compare(a.Experiment, b.Experiment)
	})
	s.snap = snap
	return true
}

// openVariants restores the partition's variant counts from its committed
// checkpoint and queues them for publishing (the stats topic may hold an
// older record of the source, from its previous owner's last sync).
func (p *partition) openVariants() {
	p.variants.restore(p.committed.Variants)
	if len(p.variants.snap) > 0 {
		snap := p.variants.snap
		p.toPublish.Store(&snap)
	}
}

// foldVariants adds the variant counts of the records processed since the
// last commit; call it while the partition is idle, before counts.flush.
func (p *partition) foldVariants() {
	if p.variants.fold(p.counts.routed) {
		snap := p.variants.snap
		p.toPublish.Store(&snap)
	}
}

// countPassedRejected counts an event that passed its budget and was then
// rejected by a later stage (a variant limit whose fallback is the
// rejected topic): a pass for the budget, and an assignment for the
// variant counts.
func (p *partition) countPassedRejected(e *pipeline.Event, bi int) {
	if bi >= 0 {
		p.counts.passed[bi]++
	}
	p.variants.count(e, p.counts.routed)
}

// seenKeys records the keys a partition routed since it was opened: one bit
// per key hash in a table of seenBits bits (1 MiB, allocated at the first
// routed event). A key is counted at its first event. A key whose bit an
// earlier key already set is not counted; as that does not depend on the
// key's variant, the key counts stay a fair sample for the SRM test. The
// table is cleared when half full (keys are then counted again, whatever
// their variant) and when the partition is (re)opened, since a rollback
// replays events.
type seenKeys struct {
	bits []uint64
	set  int
}

const seenBits = 1 << 23

// seenSeed hashes keys for seenKeys: tables live in memory only, so a
// seed per process is enough.
var seenSeed = maphash.MakeSeed()

// add marks key seen and reports whether it was not.
func (s *seenKeys) add(key string) bool {
	if s.bits == nil {
		s.bits = make([]uint64, seenBits/64)
	}
	h := maphash.String(seenSeed, key) & (seenBits - 1)
	w, m := h>>6, uint64(1)<<(h&63)
	if s.bits[w]&m != 0 {
		return false
	}
	if s.set >= seenBits/2 {
		clear(s.bits)
		s.set = 0
	}
	s.bits[w] |= m
	s.set++
	return true
}

func (s *seenKeys) reset() {
	clear(s.bits)
	s.set = 0
}

// pendingVariants is what one sync took from the partitions to publish.
type pendingVariants struct {
	p    *partition
	snap *[]stats.VariantCounts
}

// experimentRecords produces, in the current unit of work, the variant
// counts of the partitions that changed since they were last published and
// the definitions that changed. It returns what to settle with
// settleExperiments once the unit of work ended.
func (w *Worker) experimentRecords(now time.Time, parts []*partition) []pendingVariants {
	var taken []pendingVariants
	for _, p := range parts {
		if p.reward {
			continue
		}
		snap := p.toPublish.Swap(nil)
		if snap == nil {
			continue
		}
		taken = append(taken, pendingVariants{p, snap})
		for _, vc := range *snap {
			vc.Source, vc.At = p.source, now
			r, err := w.pub.VariantsRecord(vc)
			if err != nil {
				w.log.Error().Err(err).Msg("encode variant counts")
				continue
			}
			w.produce(r)
		}
	}
	w.definitionRecords(now)
	return taken
}

// settleExperiments keeps what was published if the unit of work
// committed, or queues it again.
func (w *Worker) settleExperiments(committed bool, taken []pendingVariants) {
	if committed {
		for k, v := range w.defsPending {
			w.defsSent[k] = v
		}
		for k := range w.defsGone {
			delete(w.defsSent, k)
		}
	} else {
		for _, t := range taken {
			t.p.toPublish.CompareAndSwap(nil, t.snap) // a newer snapshot wins
		}
	}
	clear(w.defsPending)
	clear(w.defsGone)
}

// definitionRecords produces the definition records that differ from those
// last committed, and tombstones for definitions that are gone.
func (w *Worker) definitionRecords(now time.Time) {
	if w.defsSent == nil {
		w.defsSent, w.defsPending, w.defsGone = map[string]string{}, map[string]string{}, map[string]bool{}
	}
	seen := map[string]bool{}
	// send produces rec unless the committed record of its key has the same
	// value but for At (cmp is the value encoded with a zero At).
	send := func(rec *kgo.Record, cmp []byte) {
		k := string(rec.Key)
		seen[k] = true
		if v, ok := w.defsSent[k]; ok && v == string(cmp) {
			return
		}
		w.defsPending[k] = string(cmp)
		w.produce(rec)
	}
	for _, b := range w.tree.Budgets() {
		d := stats.BudgetDef{Budget: b, Origin: w.cfg.txnID}
		_, cmp, err := stats.EncodeBudgetDef(d)
		if err != nil {
			w.log.Error().Err(err).Msg("encode budget definition")
			continue
		}
		d.At = now
		rec, _ := w.pub.BudgetRecord(d) // encodable: only At differs
		send(rec, cmp)
	}
	for _, e := range w.experimentDefs() {
		_, cmp, err := stats.EncodeExperimentDef(e)
		if err != nil {
			w.log.Error().Err(err).Msg("encode experiment definition")
			continue
		}
		e.At = now
		rec, _ := w.pub.ExperimentRecord(e)
		send(rec, cmp)
	}
	for k := range w.defsSent {
		if !seen[k] {
			w.defsGone[k] = true
			w.produce(w.pub.TombstoneKey([]byte(k)))
		}
	}
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
