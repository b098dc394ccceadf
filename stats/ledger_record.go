package stats

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// ledgerHeaderMax bounds the bytes of a ledger value before its entries:
// versions 2, Seq 10, At 15, Offset 10, Chunks 5, count 5.
const ledgerHeaderMax = 2 + 10 + 15 + 10 + 5 + 5

// appendLedgerHeader appends a ledger value's header; count is the number
// of entries (ignored for a heartbeat).
func appendLedgerHeader(b []byte, part LedgerPart, h ledgerHeader, count int) []byte {
	b = append(b, ledgerMajor, ledgerMinor)
	b = binary.AppendUvarint(b, h.seq)
	b = appendTime(b, h.at)
	b = binary.AppendVarint(b, h.offset)
	if part == LedgerSnapshot {
		b = binary.AppendUvarint(b, uint64(h.chunks))
	}
	if part != LedgerHeartbeat {
		b = binary.AppendUvarint(b, uint64(count))
	}
	return b
}

func cmpExperiment(a, b ExperimentID) int {
	if c := strings.Compare(a.Layer, b.Layer); c != 0 {
		return c
	}
	return strings.Compare(a.Experiment, b.Experiment)
}

// EncodeLedger returns the key and value of a ledger record (a tombstone's
// value is nil). Entries are sorted; a budget or experiment listed twice,
// an empty or overlong name, Seq 0, Offset below -1, a heartbeat with
// entries or a snapshot Index not below Chunks fail with ErrInvalidReport.
//
// The Ledger writer produces these records itself; EncodeLedger is for
// tools and tests.
func EncodeLedger(r LedgerRecord) (key, value []byte, err error) {
	if key, err = LedgerKey(r.Source, r.Part, r.Index); err != nil || r.Deleted {
		return key, nil, err
	}
	bad := func(msg string) error { return &ReportError{Source: r.Source, Msg: "ledger record: " + msg} }
	n := len(r.Reports) + len(r.Variants) + len(r.DroppedBudgets) + len(r.DroppedExperiments)
	switch {
	case r.Seq == 0:
		return nil, nil, bad("sequence 0")
	case r.Offset < -1:
		return nil, nil, bad(fmt.Sprintf("offset %d", r.Offset))
	case r.Part == LedgerHeartbeat && n > 0:
		return nil, nil, bad("heartbeat with entries")
	case r.Part == LedgerSnapshot && r.Index >= r.Chunks:
		return nil, nil, bad(fmt.Sprintf("chunk %d of %d", r.Index, r.Chunks))
	}
	body, err := appendLedgerEntries(nil, r)
	if err != nil {
		return nil, nil, err
	}
	h := ledgerHeader{seq: r.Seq, at: r.At, offset: r.Offset, chunks: r.Chunks}
	value = appendLedgerHeader(make([]byte, 0, ledgerHeaderMax+len(body)), r.Part, h, n)
	return key, append(value, body...), nil
}

// appendLedgerEntries appends r's entries in the order the layout wants.
func appendLedgerEntries(b []byte, r LedgerRecord) ([]byte, error) {
	type budgetEntry struct {
		name string
		body *entryBody // nil: dropped
	}
	type expEntry struct {
		id     ExperimentID
		counts []VariantCount // nil: dropped
	}
	budgets := make([]budgetEntry, 0, len(r.Reports)+len(r.DroppedBudgets))
	for i := range r.Reports {
		body := bodyOf(r.Reports[i])
		budgets = append(budgets, budgetEntry{r.Reports[i].Budget, &body})
	}
	for _, name := range r.DroppedBudgets {
		budgets = append(budgets, budgetEntry{name: name})
	}
	exps := make([]expEntry, 0, len(r.Variants)+len(r.DroppedExperiments))
	for _, v := range r.Variants {
		exps = append(exps, expEntry{ExperimentID{v.Layer, v.Experiment}, nonNil(v.Counts)})
	}
	for _, id := range r.DroppedExperiments {
		exps = append(exps, expEntry{id: id})
	}
	slices.SortFunc(budgets, func(a, b budgetEntry) int { return strings.Compare(a.name, b.name) })
	slices.SortFunc(exps, func(a, b expEntry) int { return cmpExperiment(a.id, b.id) })
	var content []byte
	for i, e := range budgets {
		if e.name == "" || len(e.name) > MaxNameLen || (i > 0 && e.name == budgets[i-1].name) {
			return nil, &ReportError{Budget: e.name, Source: r.Source, Msg: "ledger budget empty, overlong or listed twice"}
		}
		if e.body == nil {
			b = appendEntry(b, entryBudgetDropped, appendStr(content[:0], e.name))
			continue
		}
		content = appendBudgetContent(content[:0], e.name, e.body)
		b = appendEntry(b, entryBudget, content)
	}
	for i, e := range exps {
		if e.id.Layer == "" || e.id.Experiment == "" || len(e.id.Layer) > MaxNameLen || len(e.id.Experiment) > MaxNameLen ||
			(i > 0 && cmpExperiment(e.id, exps[i-1].id) == 0) {
			return nil, &ReportError{Budget: e.id.Layer + "/" + e.id.Experiment, Source: r.Source, Msg: "ledger experiment empty, overlong or listed twice"}
		}
		content = appendStr(appendStr(content[:0], e.id.Layer), e.id.Experiment)
		if e.counts == nil {
			b = appendEntry(b, entryExperimentDropped, content)
			continue
		}
		var err error
		if content, err = appendCounts(content, e.id.Layer+"/"+e.id.Experiment, r.Source, e.counts); err != nil {
			return nil, err
		}
		b = appendEntry(b, entryExperiment, content)
	}
	return b, nil
}

// nonNil returns s, or an empty non-nil slice for a nil s (nil means
// "dropped" to appendLedgerEntries).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// DecodeLedger parses a ledger record. Reports and Variants come back with
// the record's Source and At; a tombstone (nil value) has Deleted set.
func DecodeLedger(key, value []byte) (LedgerRecord, error) {
	src, part, index, err := parseLedgerKey(key)
	if err != nil {
		return LedgerRecord{}, err
	}
	r := LedgerRecord{Source: string(src), Part: part, Index: index, Deleted: value == nil}
	if value == nil {
		return r, nil
	}
	h, ents, err := decodeLedgerValue(part, index, value, nil)
	if err != nil {
		return LedgerRecord{}, err
	}
	r.Seq, r.At, r.Offset, r.Chunks = h.seq, h.at, h.offset, h.chunks
	for i := range ents {
		e := &ents[i]
		switch e.typ {
		case entryBudget:
			r.Reports = append(r.Reports, e.body.report(string(e.name), r.Source, r.At))
		case entryBudgetDropped:
			r.DroppedBudgets = append(r.DroppedBudgets, string(e.name))
		case entryExperiment:
			r.Variants = append(r.Variants, VariantCounts{Layer: string(e.name), Experiment: string(e.name2), Source: r.Source, At: r.At, Counts: e.counts})
		case entryExperimentDropped:
			r.DroppedExperiments = append(r.DroppedExperiments, ExperimentID{string(e.name), string(e.name2)})
		}
	}
	return r, nil
}
