package stats

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// LedgerState is the committed ledger of one source, as LoadLedgers
// restores it: what NewLedger continues from.
type LedgerState struct {
	Source string
	// Offset is the source's next input offset as of the newest
	// publication, -1 when the source has none.
	Offset int64
	// Seq is the sequence of the newest publication, 0 when none.
	Seq uint64
	// At is the instant of the newest publication.
	At time.Time
	// Reports are the budget entries, sorted by budget, with Source and
	// At set.
	Reports []flow.Report
	// Variants are the experiment entries, sorted by layer and
	// experiment, with Source and At set.
	Variants []VariantCounts

	layout ledgerLayout
}

// Report returns the committed report of budget, if the ledger has one.
// Its signature fits flow's restore callback.
func (s *LedgerState) Report(budget string) (flow.Report, bool) {
	i, ok := slices.BinarySearchFunc(s.Reports, budget, func(r flow.Report, b string) int { return strings.Compare(r.Budget, b) })
	if !ok {
		return flow.Report{}, false
	}
	return s.Reports[i], true
}

// LoadLedgers restores the committed ledgers of sources: it reads, for
// each source "topic/partition", partition number partition of the stats
// topic (and nothing else), from its start to the high watermark it has
// when LoadLedgers is called, with read_committed, as LoadCheckpoints does:
// a transaction still open is waited for (its records count once it
// commits, never when it aborts), and the result is exactly what the
// committed transactions wrote. Records of other sources in those
// partitions are skipped.
//
// The result has an entry for every source; a source without a ledger has
// Offset -1 and Seq 0. A record of a requested source whose value cannot
// be decoded (corrupt, or a newer major version) fails the load
// (*RecordError): a source must not continue from less than what was
// committed. A key that does not parse (another kind, a part a newer build
// writes) names no source of this build and is skipped.
//
// Intended use (the consumer, on assignment): states := LoadLedgers(...);
// for each source, NewLedger(topic, states[src], view.Seq(src)) and open
// the flow source with the ledger's Report as restore callback.
func LoadLedgers(ctx context.Context, clientOpts []kgo.Opt, topic string, sources ...string) (map[string]LedgerState, error) {
	if topic == "" {
		return nil, errInvalidConfig("empty stats topic")
	}
	folds := make(map[string]*restoreFold, len(sources))
	var parts []int32
	for _, s := range sources {
		_, p, err := ParseSource(s)
		if err != nil {
			return nil, err
		}
		if _, dup := folds[s]; !dup {
			folds[s] = &restoreFold{}
			parts = append(parts, p)
		}
	}
	out := make(map[string]LedgerState, len(folds))
	if len(folds) > 0 {
		var ents []rawEntry
		err := readToEnd(ctx, clientOpts, topic, "load ledgers", parts, func(r *kgo.Record) error {
			if len(r.Key) == 0 || Kind(r.Key[0]) != KindLedger {
				return nil
			}
			src, part, index, err := parseLedgerKey(r.Key)
			f := folds[string(src)]
			if err != nil || f == nil {
				return nil // another source's, or a key no source of this build owns
			}
			if ents, err = f.record(part, index, r.Key, r.Value, ents[:0]); err != nil {
				return &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for s, f := range folds {
		out[s] = f.state(s)
	}
	return out, nil
}

// restoreFold folds the ledger records of one source for LoadLedgers.
type restoreFold struct {
	ledgerHead
	floorChunks uint32
	budgets     map[string]restored[entryBody]
	exps        map[ExperimentID]restored[[]VariantCount]
	chunks      map[uint32]layoutKey
	deltas      map[uint32]layoutKey
}

type restored[T any] struct {
	seq uint64
	v   T
}

// record folds one record (a nil value is a tombstone) and returns ents
// for reuse.
func (f *restoreFold) record(part LedgerPart, index uint32, key, value []byte, ents []rawEntry) ([]rawEntry, error) {
	if f.budgets == nil {
		f.budgets = map[string]restored[entryBody]{}
		f.exps = map[ExperimentID]restored[[]VariantCount]{}
		f.chunks, f.deltas = map[uint32]layoutKey{}, map[uint32]layoutKey{}
	}
	keys := f.deltas
	if part == LedgerSnapshot {
		keys = f.chunks
	}
	if value == nil {
		if part != LedgerHeartbeat {
			keys[index] = layoutKey{}
		}
		return ents, nil
	}
	h, ents, err := decodeLedgerValue(part, index, value, ents)
	if err != nil {
		return ents, err
	}
	if part != LedgerHeartbeat {
		keys[index] = layoutKey{seq: h.seq, bytes: len(key) + len(value), live: true}
	}
	use, completed := f.apply(part, index, &h)
	if completed != 0 {
		f.floorChunks = h.chunks
	}
	for i := range ents {
		if !use {
			break
		}
		f.entry(&ents[i], h.seq)
	}
	if completed != 0 {
		f.prune(completed)
	}
	return ents, nil
}

func (f *restoreFold) entry(e *rawEntry, seq uint64) {
	switch e.typ {
	case entryBudget, entryBudgetDropped:
		cur, ok := f.budgets[string(e.name)]
		switch {
		case ok && cur.seq >= seq:
		case e.typ == entryBudget:
			f.budgets[string(e.name)] = restored[entryBody]{seq, e.body}
		case ok:
			delete(f.budgets, string(e.name))
		}
	case entryExperiment, entryExperimentDropped:
		id := ExperimentID{string(e.name), string(e.name2)}
		cur, ok := f.exps[id]
		switch {
		case ok && cur.seq >= seq:
		case e.typ == entryExperiment:
			f.exps[id] = restored[[]VariantCount]{seq, e.counts}
		case ok:
			delete(f.exps, id)
		}
	}
}

// prune drops the entries below a complete snapshot's sequence.
func (f *restoreFold) prune(floor uint64) {
	for name, b := range f.budgets {
		if b.seq < floor {
			delete(f.budgets, name)
		}
	}
	for id, e := range f.exps {
		if e.seq < floor {
			delete(f.exps, id)
		}
	}
}

func (f *restoreFold) state(source string) LedgerState {
	st := LedgerState{Source: source, Offset: -1}
	if f.seq == 0 {
		st.layout.snapshotDue = true
		return st
	}
	st.Offset, st.Seq, st.At = f.offset, f.seq, f.at
	for name, b := range f.budgets {
		if !b.v.zero() {
			st.Reports = append(st.Reports, b.v.report(name, source, f.at))
		}
	}
	slices.SortFunc(st.Reports, func(a, b flow.Report) int { return strings.Compare(a.Budget, b.Budget) })
	for id, e := range f.exps {
		st.Variants = append(st.Variants, VariantCounts{Layer: id.Layer, Experiment: id.Experiment, Source: source, At: f.at, Counts: e.v})
	}
	slices.SortFunc(st.Variants, func(a, b VariantCounts) int {
		return cmpExperiment(ExperimentID{a.Layer, a.Experiment}, ExperimentID{b.Layer, b.Experiment})
	})
	st.layout = layoutOf(f.chunks, f.deltas, f.floor, f.floorChunks)
	return st
}
