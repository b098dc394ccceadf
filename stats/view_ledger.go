package stats

import (
	"slices"
	"strings"
	"time"

	"github.com/throttler/throttler/flow"
)

// ledgerIndex is what a View keeps of the ledgers (kind 5), under the
// View's mutex: per source its head (ledger_fold.go) and its entries, and
// per budget the entries of its sources, sorted by source. Only entries
// that count something are kept, so memory follows the (budget, source)
// pairs with traffic, not budgets x sources.
type ledgerIndex struct {
	sources map[string]*vsource
	budgets map[string]*vbudget
	entries int
	// changed is set when a budget appears or disappears.
	changed bool
}

type vsource struct {
	name string
	ledgerHead
	entries []*ventry // unordered; ventry.pos is the index
	exps    map[ExperimentID]*vexp
}

// ventry is one (budget, source) entry: about 140 bytes with the slice
// elements that point to it and to its source.
type ventry struct {
	src  *vsource
	bud  *vbudget
	seq  uint64
	pos  int
	body entryBody
}

type vbudget struct {
	name    string
	entries []*ventry  // sorted by source name
	srcs    []*vsource // entries[i].src: found by pointer, without reading the entries
}

// linearFind is the count of a budget's sources up to which find scans
// their pointers rather than search their names: a scan of contiguous
// pointers reads a few cache lines, a binary search an entry and a source
// name per step.
const linearFind = 64

// find returns the index of source s's entry among b's, or where it
// would be inserted.
func (b *vbudget) find(s *vsource) (int, bool) {
	if len(b.srcs) <= linearFind {
		for i, x := range b.srcs {
			if x == s {
				return i, true
			}
		}
	}
	return searchEntry(b.entries, s.name)
}

type vexp struct {
	seq    uint64
	counts []VariantCount
}

func (x *ledgerIndex) source(name []byte) *vsource {
	if s := x.sources[string(name)]; s != nil {
		return s
	}
	if x.sources == nil {
		x.sources, x.budgets = map[string]*vsource{}, map[string]*vbudget{}
	}
	s := &vsource{name: string(name), exps: map[ExperimentID]*vexp{}}
	x.sources[s.name] = s
	return s
}

// fold applies one decoded ledger record of source src.
func (x *ledgerIndex) fold(src []byte, part LedgerPart, index uint32, h *ledgerHeader, ents []rawEntry) {
	s := x.source(src)
	use, completed := s.apply(part, index, h)
	for i := 0; use && i < len(ents); i++ {
		e := &ents[i]
		switch e.typ {
		case entryBudget, entryBudgetDropped:
			x.budget(s, e, h.seq)
		case entryExperiment, entryExperimentDropped:
			id := ExperimentID{string(e.name), string(e.name2)}
			cur := s.exps[id]
			switch {
			case cur != nil && cur.seq >= h.seq:
			case e.typ == entryExperiment:
				s.exps[id] = &vexp{seq: h.seq, counts: e.counts}
			case cur != nil:
				delete(s.exps, id)
			}
		}
	}
	if completed != 0 {
		x.prune(s, completed)
	}
}

func (x *ledgerIndex) budget(s *vsource, e *rawEntry, seq uint64) {
	b := x.budgets[string(e.name)]
	var cur *ventry
	i := 0
	if b != nil {
		var found bool
		if i, found = b.find(s); found {
			cur = b.entries[i]
		}
	}
	switch {
	case cur != nil && cur.seq >= seq:
	case e.typ == entryBudgetDropped || e.body.zero():
		if cur != nil {
			x.remove(cur)
		}
	case cur != nil:
		cur.seq, cur.body = seq, e.body
	default:
		if b == nil {
			b = &vbudget{name: string(e.name)}
			x.budgets[b.name] = b
			x.changed = true
		}
		ve := &ventry{src: s, bud: b, seq: seq, pos: len(s.entries), body: e.body}
		s.entries = append(s.entries, ve)
		b.entries = slices.Insert(b.entries, i, ve)
		b.srcs = slices.Insert(b.srcs, i, s)
		x.entries++
	}
}

func (x *ledgerIndex) remove(ve *ventry) {
	b, s := ve.bud, ve.src
	if i, ok := b.find(s); ok {
		b.entries = slices.Delete(b.entries, i, i+1)
		b.srcs = slices.Delete(b.srcs, i, i+1)
	}
	if len(b.entries) == 0 {
		delete(x.budgets, b.name)
		x.changed = true
	}
	last := s.entries[len(s.entries)-1]
	s.entries[ve.pos], last.pos = last, ve.pos
	s.entries[len(s.entries)-1] = nil
	s.entries = s.entries[:len(s.entries)-1]
	x.entries--
}

// prune drops the entries of s below a complete snapshot's sequence.
func (x *ledgerIndex) prune(s *vsource, floor uint64) {
	for i := len(s.entries) - 1; i >= 0; i-- {
		if i < len(s.entries) && s.entries[i].seq < floor {
			x.remove(s.entries[i])
		}
	}
	for id, e := range s.exps {
		if e.seq < floor {
			delete(s.exps, id)
		}
	}
}

// SourceInfo is what a View knows of one source's ledger.
type SourceInfo struct {
	Source string
	// Seq is the highest sequence seen: a new owner of the source
	// publishes above it (NewLedger's minSeq).
	Seq uint64
	// At is the newest instant the source's owner vouched for (the At of
	// the record of sequence Seq): its entries are as the View holds them
	// as of then. An At far behind the heartbeat interval means the owner
	// is silent (stale), not idle.
	At time.Time
	// Offset is the source's next input offset as of Seq.
	Offset int64
	// Budgets is the number of budgets with a non-zero entry.
	Budgets int
}

// Source returns what the View knows of source's ledger; false when it has
// seen no ledger record of it.
func (v *View) Source(source string) (SourceInfo, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	s := v.led.sources[source]
	if s == nil {
		return SourceInfo{}, false
	}
	return SourceInfo{Source: s.name, Seq: s.seq, At: s.at, Offset: s.offset, Budgets: len(s.entries)}, true
}

// Seq returns the highest sequence the View saw in source's ledger, 0 if
// none: pass it to NewLedger when taking the source over.
func (v *View) Seq(source string) uint64 {
	info, _ := v.Source(source)
	return info.Seq
}

// report is the entry's report, with the source's newest vouched
// instant as At.
func (ve *ventry) report(budget string) flow.Report {
	return ve.body.report(budget, ve.src.name, ve.src.at)
}

// searchEntry finds the entry of source among a budget's entries.
func searchEntry(es []*ventry, source string) (int, bool) {
	return slices.BinarySearchFunc(es, source, func(ve *ventry, src string) int { return strings.Compare(ve.src.name, src) })
}
