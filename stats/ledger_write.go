package stats

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// entryRun is encoded entries back to back: entry i ends at ends[i].
type entryRun struct {
	buf     []byte
	ends    []int
	content []byte // scratch
}

func (r *entryRun) add(typ byte) {
	r.buf = appendEntry(r.buf, typ, r.content)
	r.ends = append(r.ends, len(r.buf))
}

func (r *entryRun) budget(name string, b *entryBody) {
	if b == nil {
		r.content = appendStr(r.content[:0], name)
		r.add(entryBudgetDropped)
		return
	}
	r.content = appendBudgetContent(r.content[:0], name, b)
	r.add(entryBudget)
}

func (r *entryRun) experiment(source string, id ExperimentID, cs []VariantCount) error {
	if id.Layer == "" || id.Experiment == "" || len(id.Layer) > MaxNameLen || len(id.Experiment) > MaxNameLen {
		return &ReportError{Budget: id.Layer + "/" + id.Experiment, Source: source, Msg: "ledger experiment name empty or longer than MaxNameLen"}
	}
	r.content = appendStr(appendStr(r.content[:0], id.Layer), id.Experiment)
	if cs == nil {
		r.add(entryExperimentDropped)
		return nil
	}
	var err error
	if r.content, err = appendCounts(r.content, id.Layer+"/"+id.Experiment, source, cs); err != nil {
		return err
	}
	r.add(entryExperiment)
	return nil
}

// encodeChanges encodes set in the layout's order: budgets by name, then
// experiments.
func (l *Ledger) encodeChanges(r *entryRun, set changeSet) error {
	for _, name := range slices.Sorted(maps.Keys(set.budgets)) {
		r.budget(name, set.budgets[name])
	}
	for _, id := range slices.SortedFunc(maps.Keys(set.exps), cmpExperiment) {
		if err := r.experiment(l.source, id, set.exps[id]); err != nil {
			return err
		}
	}
	return nil
}

// encodeState encodes every entry of the committed state with set applied.
func (l *Ledger) encodeState(r *entryRun, set changeSet) error {
	for _, name := range liveKeys(l.budgets, set.budgets, func(b *entryBody) bool { return b != nil }, strings.Compare) {
		b, changed := set.budgets[name]
		if !changed {
			cur := l.budgets[name]
			b = &cur
		}
		r.budget(name, b)
	}
	for _, id := range liveKeys(l.exps, set.exps, func(cs []VariantCount) bool { return cs != nil }, cmpExperiment) {
		cs, changed := set.exps[id]
		if !changed {
			cs = l.exps[id]
		}
		if err := r.experiment(l.source, id, cs); err != nil {
			return err
		}
	}
	return nil
}

// liveKeys returns, sorted, the keys of committed that changes leaves
// alone and those changes sets to a live value.
func liveKeys[K comparable, C, V any](committed map[K]C, changes map[K]V, live func(V) bool, cmp func(a, b K) int) []K {
	out := make([]K, 0, len(committed)+len(changes))
	for k := range committed {
		if _, changed := changes[k]; !changed {
			out = append(out, k)
		}
	}
	for k, v := range changes {
		if live(v) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, cmp)
	return out
}

// write returns the records of a delta holding set, or of a snapshot with
// its tombstones when the chain would pass its bound, and updates layout.
func (l *Ledger) write(set changeSet, h ledgerHeader, layout *ledgerLayout) ([]*kgo.Record, error) {
	var delta entryRun
	if err := l.encodeChanges(&delta, set); err != nil {
		return nil, err
	}
	bound := max(int(l.cfg.factor*float64(layout.snapBytes)), l.cfg.recordBytes)
	estimate := len(delta.buf) + l.keyLen + ledgerHeaderMax
	if !layout.snapshotDue && layout.chunks > 0 && layout.chainBytes+estimate <= bound {
		recs, n, err := l.pack(LedgerDelta, layout.chain, h, &delta)
		if err != nil {
			return nil, err
		}
		layout.chain += uint32(len(recs))
		layout.chainBytes += n
		layout.liveDeltas = max(layout.liveDeltas, layout.chain)
		return recs, nil
	}
	var full entryRun
	if err := l.encodeState(&full, set); err != nil {
		return nil, err
	}
	recs, n, err := l.pack(LedgerSnapshot, 0, h, &full)
	if err != nil {
		return nil, err
	}
	chunks := uint32(len(recs))
	for i := chunks; i < max(layout.liveChunks, layout.chunks); i++ {
		recs = append(recs, l.tombstone(LedgerSnapshot, i))
	}
	for i := layout.chain; i < layout.liveDeltas; i++ {
		recs = append(recs, l.tombstone(LedgerDelta, i))
	}
	for _, k := range layout.strays {
		if k.part == LedgerDelta || k.index >= max(chunks, layout.liveChunks, layout.chunks) {
			recs = append(recs, l.tombstone(k.part, k.index))
		}
	}
	*layout = ledgerLayout{chunks: chunks, liveChunks: chunks, snapBytes: n, liveDeltas: min(layout.chain, layout.liveDeltas)}
	return recs, nil
}

func (l *Ledger) tombstone(part LedgerPart, i uint32) *kgo.Record {
	key, _ := LedgerKey(l.source, part, i) // the source name was checked by NewLedger
	return l.record(key, nil)
}

// pack splits run into records of part numbered from first, each within
// the record bound; a snapshot of nothing is one empty chunk. It returns
// the records and their bytes (keys and values).
func (l *Ledger) pack(part LedgerPart, first uint32, h ledgerHeader, run *entryRun) ([]*kgo.Record, int, error) {
	room := l.cfg.recordBytes - l.keyLen - ledgerHeaderMax
	type span struct{ from, to int } // entries [from, to)
	var spans []span
	start, base := 0, 0 // the current span's first entry, and where it begins
	for i, end := range run.ends {
		if end-base > room && i > start {
			spans = append(spans, span{start, i})
			start, base = i, run.ends[i-1]
		}
		if end-base > room {
			return nil, 0, &ReportError{Source: l.source, Msg: fmt.Sprintf("ledger entry of %d bytes does not fit a record of %d", end-base, l.cfg.recordBytes)}
		}
	}
	spans = append(spans, span{start, len(run.ends)})
	h.chunks = uint32(len(spans))
	recs := make([]*kgo.Record, 0, len(spans))
	total := 0
	for j, s := range spans {
		key, err := LedgerKey(l.source, part, first+uint32(j))
		if err != nil {
			return nil, 0, err
		}
		from, to := 0, 0
		if s.from > 0 {
			from = run.ends[s.from-1]
		}
		if s.to > 0 {
			to = run.ends[s.to-1]
		}
		v := appendLedgerHeader(make([]byte, 0, ledgerHeaderMax+to-from), part, h, s.to-s.from)
		v = append(v, run.buf[from:to]...)
		recs = append(recs, l.record(key, v))
		total += len(key) + len(v)
	}
	return recs, total, nil
}
