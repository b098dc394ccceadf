package stats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	// Problems are the records the restore left out (see LoadLedgers):
	// the source must not continue from this state.
	Problems []LedgerProblem

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

// ErrBeyondEnd is wrapped by the LedgerProblem of a ledger record whose
// input offset is past the end of its input partition: not written by the
// partition's owner (or the topic was deleted and made again), so the
// records before that offset would be skipped as counted.
var ErrBeyondEnd = errors.New("ledger offset beyond the input partition's end")

// LedgerProblem is a record of a source's ledger that a restore leaves
// out: the newest record of its key does not decode (ErrCorrupt,
// ErrUnknownVersion), or names an input offset past the input
// partition's end (ErrBeyondEnd). It wraps that error.
type LedgerProblem struct {
	Source string
	Part   LedgerPart
	Index  uint32
	// Partition and Offset place the record in the stats topic.
	Partition int32
	Offset    int64
	Err       error
}

func (p *LedgerProblem) Error() string {
	return fmt.Sprintf("stats: ledger of %s: %s %d at stats partition %d offset %d: %v", p.Source, p.Part, p.Index, p.Partition, p.Offset, p.Err)
}

func (p *LedgerProblem) Unwrap() error { return p.Err }

// LoadLedgers restores the committed ledgers of sources: it reads, for
// each source "topic/partition", partition number partition of the stats
// topic (and nothing else), from its start to the high watermark it has
// when LoadLedgers is called, with read_committed: a transaction still
// open is waited for (its records count once it
// commits, never when it aborts), and the result is exactly what the
// committed transactions wrote. Records of other sources in those
// partitions are skipped.
//
// Of every key it folds the newest record only, in the order of those
// records: what compaction leaves of the partition, so that the result
// does not depend on how far compaction got, and a key overwritten or
// tombstoned (by `throttler ledger repair`) counts as such at once.
//
// The result has an entry for every source; a source without a ledger has
// Offset -1 and Seq 0. A key whose newest record cannot be decoded
// (corrupt, a newer major version), or carries a sequence within
// LedgerSeqReserve of MaxLedgerSeq (which no writer reaches:
// ErrSequenceExhausted), is left out of the fold and listed in the
// source's Problems: the caller must not continue such a source, which
// may restore less than was committed. A key that does not parse
// (another kind, a part a newer build writes) names no source of this
// build and is skipped. The error is about reading the topic.
//
// Intended use (the consumer, on assignment): states := LoadLedgers(...);
// for each source without Problems, NewLedger(topic, states[src],
// view.Seq(src)) and open the flow source with the ledger's Report as
// restore callback.
func LoadLedgers(ctx context.Context, clientOpts []kgo.Opt, topic string, sources ...string) (map[string]LedgerState, error) {
	return LoadLedgersWithin(ctx, clientOpts, topic, nil, sources...)
}

// InputEnds returns, by source, the end offset (high watermark) of the
// input partition each names; a source it leaves out is not checked.
type InputEnds func(ctx context.Context, sources []string) (map[string]int64, error)

// LoadLedgersWithin is LoadLedgers that also leaves out (as Problems
// wrapping ErrBeyondEnd) the records that name an input offset past their
// input partition's end, as ends gives it once the ledgers are read (a
// ledger's offset is never past the end it had when it was committed, and
// ends only grow). An error of ends fails the load. ends may be nil.
func LoadLedgersWithin(ctx context.Context, clientOpts []kgo.Opt, topic string, ends InputEnds, sources ...string) (map[string]LedgerState, error) {
	reads, err := readLedgers(ctx, clientOpts, topic, sources, false)
	if err != nil {
		return nil, err
	}
	var endOf map[string]int64
	if ends != nil && len(reads) > 0 {
		names := make([]string, 0, len(reads))
		for s := range reads {
			names = append(names, s)
		}
		if endOf, err = ends(ctx, names); err != nil {
			return nil, fmt.Errorf("stats: input partitions' ends: %w", err)
		}
	}
	out := make(map[string]LedgerState, len(reads))
	for s, r := range reads {
		end, ok := endOf[s]
		if !ok {
			end = -1
		}
		out[s] = r.fold(s, end, nil)
	}
	return out, nil
}

// ledgerRead is what a restore read of one source's ledger: the newest
// record of each of its keys, and with keepAll every record of each key
// (InspectLedger).
type ledgerRead struct {
	newest map[string]*kgo.Record
	all    map[string][]*kgo.Record // in offset order; nil unless kept
}

// readLedgers reads the stats partitions of sources to their end and
// keeps the newest record of every key of their ledgers (and every record
// with keepAll).
func readLedgers(ctx context.Context, clientOpts []kgo.Opt, topic string, sources []string, keepAll bool) (map[string]*ledgerRead, error) {
	if topic == "" {
		return nil, errInvalidConfig("empty stats topic")
	}
	reads := make(map[string]*ledgerRead, len(sources))
	var parts []int32
	for _, s := range sources {
		_, p, err := ParseSource(s)
		if err != nil {
			return nil, err
		}
		if _, dup := reads[s]; !dup {
			reads[s] = &ledgerRead{newest: map[string]*kgo.Record{}}
			if keepAll {
				reads[s].all = map[string][]*kgo.Record{}
			}
			parts = append(parts, p)
		}
	}
	if len(reads) == 0 {
		return reads, nil
	}
	err := readToEnd(ctx, clientOpts, topic, "load ledgers", parts, func(r *kgo.Record) error {
		if len(r.Key) == 0 || Kind(r.Key[0]) != KindLedger {
			return nil
		}
		src, _, _, err := parseLedgerKey(r.Key)
		if err != nil {
			return nil // a key no source of this build owns
		}
		if rd := reads[string(src)]; rd != nil {
			rd.newest[string(r.Key)] = r
			if rd.all != nil {
				rd.all[string(r.Key)] = append(rd.all[string(r.Key)], r)
			}
		}
		return nil
	})
	return reads, err
}

// fold folds the newest record of every key, in offset order, leaving
// out those that do not decode or name an input offset past end (when
// end >= 0). infos, when not nil, gets every record's description.
func (rd *ledgerRead) fold(source string, end int64, infos *[]LedgerRecordInfo) LedgerState {
	recs := make([]*kgo.Record, 0, len(rd.newest))
	for _, r := range rd.newest {
		recs = append(recs, r)
	}
	return foldRecs(source, recs, end, infos)
}

// foldRecs folds recs (at most one per key) in offset order, as fold does.
func foldRecs(source string, recs []*kgo.Record, end int64, infos *[]LedgerRecordInfo) LedgerState {
	slices.SortFunc(recs, func(a, b *kgo.Record) int { return cmp.Compare(a.Offset, b.Offset) })
	f := &restoreFold{}
	var problems []LedgerProblem
	var ents []rawEntry
	for _, r := range recs {
		_, part, index, _ := parseLedgerKey(r.Key) // parsed when read
		info := LedgerRecordInfo{Part: part, Index: index, Partition: r.Partition, Offset: r.Offset, Deleted: r.Value == nil, Bytes: len(r.Key) + len(r.Value)}
		var err error
		ents, err = f.record(part, index, r.Key, r.Value, end, &info, ents[:0])
		if err != nil {
			info.Problem = err
			problems = append(problems, LedgerProblem{Source: source, Part: part, Index: index, Partition: r.Partition, Offset: r.Offset, Err: err})
		}
		if infos != nil {
			*infos = append(*infos, info)
		}
	}
	st := f.state(source)
	st.Problems = problems
	return st
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
// for reuse. A record that does not decode, or whose input offset is past
// end (when end >= 0), is left out (the error says why); its key is
// counted as live, so that the next snapshot tombstones it. info, when
// not nil, gets the record's header.
func (f *restoreFold) record(part LedgerPart, index uint32, key, value []byte, end int64, info *LedgerRecordInfo, ents []rawEntry) ([]rawEntry, error) {
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
	start := len(ents)
	h, ents, err := decodeLedgerValue(part, index, value, ents)
	switch {
	case err != nil:
	case end >= 0 && h.offset > end:
		err = fmt.Errorf("%w: offset %d, the partition ends at %d", ErrBeyondEnd, h.offset, end)
	case h.seq > MaxLedgerSeq-LedgerSeqReserve:
		err = fmt.Errorf("%w: sequence %d", ErrSequenceExhausted, h.seq)
	}
	if err != nil && len(ents) > start {
		clear(ents[start:])
		ents = ents[:start]
	}
	if info != nil && err == nil {
		info.Seq, info.At, info.InputOffset, info.Entries = h.seq, h.at, h.offset, len(ents)-start
	}
	if err != nil {
		if part != LedgerHeartbeat {
			keys[index] = layoutKey{bytes: len(key) + len(value), live: true}
		}
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
