package stats

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// ErrLedgerBusy is returned by Ledger.Records while the records it returned
// last are neither Committed, Aborted nor rolled back.
var ErrLedgerBusy = errors.New("stats: ledger records outstanding")

// ErrSequenceExhausted is returned by NewLedger for a restored sequence
// within LedgerSeqReserve of MaxLedgerSeq, which no writer reaches (a
// record written by something else): continuing it would soon hand out
// sequences readers reject.
var ErrSequenceExhausted = errors.New("stats: ledger sequence near its limit")

// Changes are what changed in a source's counters since the ledger was
// last given them: the current cumulative values, not increments.
type Changes struct {
	// Reports are the budgets whose counters changed (Budget, Since,
	// Total, Period, InPeriod, Cut; Source and At are ignored).
	Reports []flow.Report
	// Variants are the experiments whose variant counts changed (Layer,
	// Experiment, Counts; Source and At are ignored).
	Variants []VariantCounts
	// DropBudgets and DropExperiments leave the ledger (a deleted budget
	// or experiment); unknown ones are ignored.
	DropBudgets     []string
	DropExperiments []ExperimentID
}

// Ledger writes the ledger of one source: at every commit of the
// consumer, the records that bring the stats topic from the committed
// ledger to the source's current counters, for the commit's transaction.
//
// Intended use (the consumer, wave 2), per owned source:
//
//	// on assignment
//	states, err := stats.LoadLedgers(ctx, clientOpts, statsTopic, sources...)
//	l, err := stats.NewLedger(statsTopic, states[src], view.Seq(src))
//	src, err := tree.Open(src, now, l.Report) // committed counters
//	// at every commit, for every owned source
//	recs, err := l.Records(changes, nextOffset, now) // nil: nothing due
//	// ... produce recs into the transaction (partitioner: LedgerPartitioner)
//	// once the transaction ended:
//	l.Committed()  // or l.Aborted() to offer the changes again, or
//	               // l.Rollback() after rolling counters back to l.Report
//
// Records writes a delta (only what changed), or a snapshot (every entry)
// when the chain of deltas grew past k times the snapshot
// (WithSnapshotFactor), tombstoning the keys the snapshot makes obsolete;
// with no change it writes a heartbeat when the offset moved or the
// heartbeat interval (WithHeartbeat) passed; otherwise nothing. Every
// record is at most WithRecordBytes long and carries a sequence number one
// above the previous call's.
//
// A Ledger is safe for concurrent use; Records, Committed, Aborted and
// Rollback are meant to be called in turn by the committing goroutine,
// while Report may be called from any.
type Ledger struct {
	topic     string
	source    string
	partition int32
	cfg       ledgerCfg
	keyLen    int

	mu        sync.Mutex
	budgets   map[string]entryBody // committed
	exps      map[ExperimentID][]VariantCount
	offset    int64
	seq       uint64    // the highest sequence handed out
	committed uint64    // the sequence of the newest committed record
	lastAt    time.Time // At of the newest committed record; zero: none by this owner
	layout    ledgerLayout
	pending   *ledgerTxn
	retry     changeSet // changes of aborted transactions, offered again
}

// changeSet maps what changed to its new value; nil means dropped.
type changeSet struct {
	budgets map[string]*entryBody
	exps    map[ExperimentID][]VariantCount
}

func (c *changeSet) empty() bool { return len(c.budgets) == 0 && len(c.exps) == 0 }

type ledgerTxn struct {
	seq     uint64
	changes changeSet
	offset  int64
	at      time.Time
	layout  ledgerLayout
}

// NewLedger returns the writer of st.Source's ledger on topic, continuing
// from st (from LoadLedgers; a zero LedgerState but for Source and
// Offset -1 starts an empty ledger). Its first sequence is one above
// max(st.Seq, minSeq): pass the sequence a View saw for the source
// (View.Seq), so that a new owner always publishes above its predecessor.
// Records go to partition p of topic for source "topic/p".
//
// A state with Problems is refused (the first one is returned): it may
// hold less than was committed. So is a sequence st.Seq within
// LedgerSeqReserve of MaxLedgerSeq (ErrSequenceExhausted); a minSeq there
// is ignored (a View saw a record no writer made; the restore, which
// honours tombstones, is what counts).
func NewLedger(topic string, st LedgerState, minSeq uint64, opts ...LedgerOpt) (*Ledger, error) {
	if len(st.Problems) > 0 {
		return nil, &st.Problems[0]
	}
	if st.Seq > MaxLedgerSeq-LedgerSeqReserve {
		return nil, fmt.Errorf("%w: %s at sequence %d", ErrSequenceExhausted, st.Source, st.Seq)
	}
	if minSeq > MaxLedgerSeq-LedgerSeqReserve {
		minSeq = 0
	}
	c := defaultLedgerCfg()
	for _, o := range opts {
		o.applyLedger(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if topic == "" {
		return nil, errInvalidConfig("empty stats topic")
	}
	_, p, err := ParseSource(st.Source)
	if err != nil {
		return nil, err
	}
	l := &Ledger{
		topic: topic, source: st.Source, partition: p, cfg: c,
		keyLen:    len(st.Source) + 8,
		budgets:   make(map[string]entryBody, len(st.Reports)),
		exps:      make(map[ExperimentID][]VariantCount, len(st.Variants)),
		offset:    st.Offset,
		seq:       max(st.Seq, minSeq),
		committed: st.Seq,
		layout:    st.layout,
	}
	if l.offset < -1 {
		l.offset = -1
	}
	for _, r := range st.Reports {
		if b := bodyOf(r); !b.zero() {
			l.budgets[r.Budget] = b
		}
	}
	for _, v := range st.Variants {
		l.exps[ExperimentID{v.Layer, v.Experiment}] = sortedCounts(v.Counts)
	}
	if minSeq > st.Seq || st.Seq == 0 {
		// Someone published more than was restored, or nothing was: a
		// snapshot at a higher sequence settles what readers hold.
		l.layout.snapshotDue = true
	}
	return l, nil
}

// Source returns the source whose ledger l writes.
func (l *Ledger) Source() string { return l.source }

// Report returns the committed counters of budget (At is the instant of
// the newest committed record), if the ledger has them: the restore
// callback of the source's lanes, and the state to roll back to.
func (l *Ledger) Report(budget string) (flow.Report, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.budgets[budget]
	if !ok {
		return flow.Report{}, false
	}
	return b.report(budget, l.source, l.lastAt), true
}

// Counted appends to dst the budget and period of every committed entry
// (in no particular order) and returns the extended slice: what
// flow.Source.Forgettable chooses from.
func (l *Ledger) Counted(dst []flow.Counted) []flow.Counted {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, b := range l.budgets {
		dst = append(dst, flow.Counted{Budget: name, Period: b.period})
	}
	return dst
}

// Variants returns the committed variant counts of every experiment,
// sorted by layer and experiment.
func (l *Ledger) Variants() []VariantCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]VariantCounts, 0, len(l.exps))
	for _, id := range slices.SortedFunc(maps.Keys(l.exps), cmpExperiment) {
		out = append(out, VariantCounts{Layer: id.Layer, Experiment: id.Experiment, Source: l.source, At: l.lastAt, Counts: slices.Clone(l.exps[id])})
	}
	return out
}

// Offset returns the committed offset (-1 if none).
func (l *Ledger) Offset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.offset
}

// Seq returns the highest sequence handed out so far.
func (l *Ledger) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Due reports whether Records, given no change and the committed offset,
// would write a heartbeat at now: the consumer commits an idle source's
// transaction when it is.
func (l *Ledger) Due(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending == nil && (l.lastAt.IsZero() || now.Sub(l.lastAt) >= l.cfg.heartbeat || !l.retry.empty())
}

// Records returns the records that take the source's ledger from its
// committed state to c and offset (the source's next input offset, -1 if
// unknown) at now, to produce in the transaction that commits offset; nil
// when nothing is due. Changes equal to the committed values are left out.
// The caller then calls Committed, Aborted or Rollback; until then Records
// fails with ErrLedgerBusy. An encoding failure (ErrInvalidReport: a bad
// name, an entry too long for a record) changes nothing.
func (l *Ledger) Records(c Changes, offset int64, now time.Time) ([]*kgo.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != nil {
		return nil, ErrLedgerBusy
	}
	if l.seq >= MaxLedgerSeq {
		return nil, fmt.Errorf("%w: %s at sequence %d", ErrSequenceExhausted, l.source, l.seq)
	}
	set, err := l.merge(c)
	if err != nil {
		return nil, err
	}
	if offset < -1 {
		offset = -1
	}
	at := now.Round(0).UTC()
	h := ledgerHeader{seq: l.seq + 1, at: at, offset: offset}
	txn := &ledgerTxn{seq: h.seq, changes: set, offset: offset, at: at, layout: l.layout}
	var recs []*kgo.Record
	switch {
	case !set.empty() || l.layout.snapshotDue:
		recs, err = l.write(set, h, &txn.layout)
	case offset != l.offset || l.lastAt.IsZero() || now.Sub(l.lastAt) >= l.cfg.heartbeat:
		recs, err = l.heartbeat(h)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.seq = h.seq
	l.pending = txn
	return recs, nil
}

// Committed applies the records Records returned last: their transaction
// committed.
func (l *Ledger) Committed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.pending
	if t == nil {
		return
	}
	for name, b := range t.changes.budgets {
		if b == nil {
			delete(l.budgets, name)
		} else {
			l.budgets[name] = *b
		}
	}
	for id, cs := range t.changes.exps {
		if cs == nil {
			delete(l.exps, id)
		} else {
			l.exps[id] = cs
		}
	}
	l.offset, l.lastAt, l.layout, l.committed = t.offset, t.at, t.layout, t.seq
	l.pending, l.retry = nil, changeSet{}
}

// Aborted says the records Records returned last were not written: their
// changes are offered again by the next Records (a newer value given then
// wins). Use it when the source's counters stay as they were; when the
// caller rolls them back to the committed ones, use Rollback.
func (l *Ledger) Aborted() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != nil {
		l.retry, l.pending = l.pending.changes, nil
	}
}

// Rollback says the records Records returned last were not written and the
// caller restored the source's counters from Report: the changes not yet
// committed are forgotten.
func (l *Ledger) Rollback() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending, l.retry = nil, changeSet{}
}

// merge returns the changes of c over those offered again, without those
// equal to the committed values.
func (l *Ledger) merge(c Changes) (changeSet, error) {
	set := changeSet{budgets: maps.Clone(l.retry.budgets), exps: maps.Clone(l.retry.exps)}
	if set.budgets == nil {
		set.budgets = map[string]*entryBody{}
	}
	if set.exps == nil {
		set.exps = map[ExperimentID][]VariantCount{}
	}
	for i := range c.Reports {
		r := &c.Reports[i]
		if r.Budget == "" || len(r.Budget) > MaxNameLen {
			return changeSet{}, &ReportError{Budget: r.Budget, Source: l.source, Msg: "empty budget name, or longer than MaxNameLen"}
		}
		b := bodyOf(*r)
		b.since = b.since.Round(0).UTC()
		set.budgets[r.Budget] = &b
	}
	for _, name := range c.DropBudgets {
		set.budgets[name] = nil
	}
	for _, v := range c.Variants {
		set.exps[ExperimentID{v.Layer, v.Experiment}] = sortedCounts(v.Counts)
	}
	for _, id := range c.DropExperiments {
		set.exps[id] = nil
	}
	for name, b := range set.budgets {
		cur, ok := l.budgets[name]
		if (b == nil && !ok) || (b != nil && ((ok && cur.equal(b)) || (!ok && b.zero()))) {
			delete(set.budgets, name)
		}
	}
	for id, cs := range set.exps {
		cur, ok := l.exps[id]
		if (cs == nil && !ok) || (cs != nil && ((ok && slices.Equal(cur, cs)) || (!ok && len(cs) == 0))) {
			delete(set.exps, id)
		}
	}
	return set, nil
}

// sortedCounts returns a sorted, non-nil copy of cs.
func sortedCounts(cs []VariantCount) []VariantCount {
	out := make([]VariantCount, len(cs))
	copy(out, cs)
	slices.SortFunc(out, func(a, b VariantCount) int { return strings.Compare(a.Variant, b.Variant) })
	return out
}

func (l *Ledger) heartbeat(h ledgerHeader) ([]*kgo.Record, error) {
	key, err := LedgerKey(l.source, LedgerHeartbeat, 0)
	if err != nil {
		return nil, err
	}
	return []*kgo.Record{l.record(key, appendLedgerHeader(nil, LedgerHeartbeat, h, 0))}, nil
}

func (l *Ledger) record(key, value []byte) *kgo.Record {
	return &kgo.Record{Topic: l.topic, Partition: l.partition, Key: key, Value: value}
}

// State returns the committed ledger, as LoadLedgers would restore it from
// the topic.
func (l *Ledger) State() LedgerState {
	l.mu.Lock()
	st := LedgerState{Source: l.source, Offset: l.offset, Seq: l.committed, At: l.lastAt, layout: l.layout}
	for _, name := range slices.Sorted(maps.Keys(l.budgets)) {
		b := l.budgets[name]
		st.Reports = append(st.Reports, b.report(name, l.source, l.lastAt))
	}
	l.mu.Unlock()
	st.Variants = l.Variants()
	return st
}
