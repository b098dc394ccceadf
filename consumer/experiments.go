package consumer

import (
	"hash/maphash"
	"slices"
	"strings"

	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// Variant counts on the stats topic.
//
// Each input partition keeps the cumulative count of the events it routed
// to every variant (passed by their budget and assigned; a variant limit
// may then send them elsewhere): restored from the partition's ledger
// when the partition is opened, advanced at every commit from the counts
// of the records processed since, and written in the ledger (the
// experiments that moved) in the same transaction. A rebalance therefore
// neither loses nor double counts: the new owner continues from the
// committed counts, as it does for budgets.

// variantState is an input partition's cumulative variant counts, owned by
// the partition's goroutine (or by the poll loop while the partition is
// idle).
type variantState struct {
	counts map[routeKey]stats.VariantCount // Variant unset
	moved  map[stats.ExperimentID]bool     // experiments changed since the last commit

	seen       seenKeys
	keysRouted map[routeKey]uint64 // keys counted since the last fold
}

// restore sets the counts to those of a ledger.
func (s *variantState) restore(vcs []stats.VariantCounts) {
	s.counts = make(map[routeKey]stats.VariantCount)
	for _, vc := range vcs {
		for _, c := range vc.Counts {
			s.counts[routeKey{vc.Layer, vc.Experiment, c.Variant}] = stats.VariantCount{Count: c.Count, Keys: c.Keys}
		}
	}
	clear(s.moved)
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

// fold adds routed counts and notes the experiments they moved.
func (s *variantState) fold(routed map[routeKey]uint64) {
	// routed holds every variant keysRouted does: a counted key is a
	// counted event.
	if len(routed) == 0 {
		return
	}
	if s.counts == nil {
		s.counts = make(map[routeKey]stats.VariantCount)
	}
	if s.moved == nil {
		s.moved = make(map[stats.ExperimentID]bool)
	}
	for k, n := range routed {
		c := s.counts[k]
		c.Count += n
		c.Keys += s.keysRouted[k]
		s.counts[k] = c
		s.moved[stats.ExperimentID{Layer: k.layer, Experiment: k.experiment}] = true
	}
	clear(s.keysRouted)
}

// changed returns the counts of every variant of the experiments that
// moved since the last call (stats.Changes.Variants), and forgets them.
func (s *variantState) changed() []stats.VariantCounts {
	if len(s.moved) == 0 {
		return nil
	}
	by := make(map[stats.ExperimentID][]stats.VariantCount, len(s.moved))
	for k, c := range s.counts {
		id := stats.ExperimentID{Layer: k.layer, Experiment: k.experiment}
		if s.moved[id] {
			c.Variant = k.variant
			by[id] = append(by[id], c)
		}
	}
	out := make([]stats.VariantCounts, 0, len(by))
	for id, cs := range by {
		slices.SortFunc(cs, func(a, b stats.VariantCount) int { return strings.Compare(a.Variant, b.Variant) })
		out = append(out, stats.VariantCounts{Layer: id.Layer, Experiment: id.Experiment, Counts: cs})
	}
	clear(s.moved)
	return out
}

// foldVariants adds the variant counts of the records processed since the
// last commit; call it while the partition is idle, before counts.flush.
func (p *partition) foldVariants() { p.variants.fold(p.counts.routed) }

// countPassedRejected counts an event that passed its budget and was then
// rejected by a later stage (a variant limit whose fallback is the
// rejected topic): a pass for the budget, and an assignment for the
// variant counts.
func (p *partition) countPassedRejected(e *pipeline.Event) {
	c := p.counts.budget(e.Fields.Budget)
	c.offered++
	c.passed++
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
