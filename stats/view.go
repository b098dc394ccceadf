package stats

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// View is the cluster view, kept in memory by following the whole stats
// topic from its start with a consumer of its own (read_committed, no
// group, every partition): every source's ledger folded (kind 5,
// ledger_fold.go), holding only the (budget, source) entries that count
// something, indexed by budget; the definitions (kinds 2 and 4) and the
// workers' statuses (kind 6), of which the newest record of a key wins
// and a tombstone removes the key. Records that cannot be decoded
// (corrupt, a newer major version, a kind this build does not know) are
// skipped and counted in Stats.
//
// A View is safe for concurrent use by many goroutines. It implements the
// read side of flow.Exchange. The zero value is not usable: create one
// with NewView, and Close it.
type View struct {
	topic   string
	cfg     cfg
	cl      *kgo.Client
	adm     *kadm.Client
	created time.Time

	mu   sync.RWMutex
	led  ledgerIndex // kind 5 (view_ledger.go)
	defs definitions // kinds 2, 4 and 6 (definitions.go)
	gen  uint64      // counts changes to the set of budgets

	sortMu sync.Mutex
	sorted []string // the budgets, sorted, as of sortGen
	sortOK bool
	sortGn uint64

	caught      chan struct{} // closed once caught up
	caughtUp    atomic.Bool
	lastApplied atomic.Pointer[time.Time] // cfg.now() at the last apply; nil: none yet

	applied, deleted, skipped, fetchErrs atomic.Uint64
	lastErr                              atomic.Pointer[errBox]

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	ops       []viewOp   // reused by the reading goroutine only
	ents      []rawEntry // the ledger entries of ops, likewise
}

type errBox struct{ err error }

type viewOp struct {
	deleted bool
	budget  bool      // a budget definition: def
	def     BudgetDef // (kept in the op, not allocated: a cluster has a million)
	other   *Record   // a record of another kind than the ledger or a budget, else nil
	ledger  bool      // a ledger record: the fields below
	src     []byte
	part    LedgerPart
	index   uint32
	h       ledgerHeader
	from    int // its entries are ents[from:to]
	to      int
}

// ViewStats are a View's counters, for the caller's metrics.
type ViewStats struct {
	Applied     uint64 // records applied (ledger records and the other kinds)
	Deleted     uint64 // tombstones applied
	Skipped     uint64 // records that could not be decoded
	FetchErrors uint64 // fetch errors the client reported (it retries on its own)
	LastError   error  // the newest decode (*RecordError) or fetch (*TopicError) error, or nil
	Budgets     int    // budgets known
	Sources     int    // (budget, source) pairs known: the non-zero ledger entries
}

// NewView starts following topic. clientOpts are the caller's connection
// options (seed brokers, TLS, SASL, dialer); the View creates its own
// client from them and adds its consuming options, so they must not name a
// consumer group. ctx bounds only the start (listing the topic's offsets);
// the View runs until Close.
//
// NewView fails with a *TopicError wrapping ErrTopicNotFound when the topic
// does not exist: create it first with EnsureTopics.
func NewView(ctx context.Context, topic string, clientOpts []kgo.Opt, opts ...ViewOpt) (*View, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if topic == "" {
		return nil, errInvalidConfig("empty stats topic")
	}
	cl, err := newReader(clientOpts,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return nil, err
	}
	v := &View{
		topic:   topic,
		cfg:     c,
		cl:      cl,
		adm:     kadm.NewClient(cl),
		created: c.now(),
		caught:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	v.defs.digestOnly, v.defs.seed = c.digests, maphash.MakeSeed()
	starts, ends, err := listOffsets(ctx, v.adm, topic, c.waiting)
	if err != nil {
		cl.Close()
		return nil, err
	}
	track := newCatchUp(starts, ends)
	if track.done() {
		v.markCaughtUp()
		track = nil
	}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	go v.run(track)
	return v, nil
}

// Topic returns the stats topic the View follows.
func (v *View) Topic() string { return v.topic }

// View appends to dst the report of every source of budget, sorted by
// source, and returns the extended slice; it implements
// flow.Exchange.View. A ledger entry's report has the source's newest
// vouched instant as At (SourceInfo.At): a source whose owner is alive but
// idle keeps a recent At, a silent owner's falls behind. Sources without
// a non-zero entry are left out. It costs O(sources of budget).
func (v *View) View(budget string, dst []flow.Report) []flow.Report {
	v.mu.RLock()
	dst = v.appendView(budget, dst)
	v.mu.RUnlock()
	return dst
}

// appendView is View under the read lock.
func (v *View) appendView(budget string, dst []flow.Report) []flow.Report {
	if b := v.led.budgets[budget]; b != nil {
		for _, ve := range b.entries {
			dst = append(dst, ve.report(budget))
		}
	}
	return dst
}

// Report returns the report of budget x source, if the View has one.
func (v *View) Report(budget, source string) (flow.Report, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if b := v.led.budgets[budget]; b != nil {
		if i, ok := searchEntry(b.entries, source); ok {
			return b.entries[i].report(budget), true
		}
	}
	return flow.Report{}, false
}

// Budgets returns the budgets the View has reports for, sorted. The sorted
// list is kept until a budget appears or disappears, so a call costs a
// copy of it.
func (v *View) Budgets() []string { return slices.Clone(v.sortedBudgets()) }

// sortedBudgets returns the shared sorted list of budgets.
func (v *View) sortedBudgets() []string {
	v.mu.RLock()
	gen := v.gen
	v.sortMu.Lock()
	defer v.sortMu.Unlock()
	if v.sortOK && v.sortGn == gen {
		v.mu.RUnlock()
		return v.sorted
	}
	out := make([]string, 0, len(v.led.budgets))
	for b := range v.led.budgets {
		out = append(out, b)
	}
	v.mu.RUnlock()
	sort.Strings(out)
	v.sorted, v.sortOK, v.sortGn = out, true, gen
	return out
}

// CaughtUp reports whether the View has read every partition of the topic
// up to the high watermark it had when the View started. It stays true
// afterwards. Under read_committed a transaction open at the start holds it
// back until that transaction ends.
func (v *View) CaughtUp() bool { return v.caughtUp.Load() }

// WaitCaughtUp blocks until the View is caught up (nil), ctx ends (ctx's
// error) or the View is closed (ErrClosed).
func (v *View) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-v.caught:
		return nil
	default:
	}
	select {
	case <-v.caught:
		return nil
	case <-v.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Age is the time since the View last applied a record (report or
// tombstone), or since it was created if it has applied none: how stale the
// view may be. Publishers write every sync interval, so an age well past it
// means they, or this reader, are stuck.
func (v *View) Age() time.Duration {
	now := v.cfg.now()
	if last := v.lastApplied.Load(); last != nil {
		return now.Sub(*last)
	}
	return now.Sub(v.created)
}

// Stats returns the View's counters.
func (v *View) Stats() ViewStats {
	s := ViewStats{
		Applied:     v.applied.Load(),
		Deleted:     v.deleted.Load(),
		Skipped:     v.skipped.Load(),
		FetchErrors: v.fetchErrs.Load(),
	}
	if b := v.lastErr.Load(); b != nil {
		s.LastError = b.err
	}
	v.mu.RLock()
	s.Budgets, s.Sources = len(v.led.budgets), v.led.entries
	v.mu.RUnlock()
	return s
}

// Close stops following the topic and closes the View's client. The View
// keeps answering with what it had read. Close is idempotent.
func (v *View) Close() {
	v.closeOnce.Do(func() {
		v.cancel()
		<-v.done
		v.cl.Close()
	})
}

func (v *View) markCaughtUp() {
	if !v.caughtUp.Swap(true) {
		close(v.caught)
	}
}

func (v *View) setErr(err error) { v.lastErr.Store(&errBox{err}) }

// run is the View's reading goroutine. track is nil once caught up.
func (v *View) run(track *catchUp) {
	defer close(v.done)
	for {
		ctx, cancel := v.ctx, context.CancelFunc(func() {})
		if track != nil {
			ctx, cancel = context.WithTimeout(v.ctx, recheckEvery)
		}
		fs := v.cl.PollFetches(ctx)
		cancel()
		if v.ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if isStopErr(err) {
				return
			}
			v.fetchErrs.Add(1)
			v.setErr(&TopicError{Topic: t, Op: fmt.Sprintf("fetch partition %d", p), Err: err})
		})
		v.apply(fs, track)
		if track == nil {
			continue
		}
		if fs.Empty() && !track.done() {
			if starts, _, err := listOffsets(v.ctx, v.adm, v.topic, nil); err == nil {
				track.starts(starts)
			}
		}
		if track.done() {
			v.markCaughtUp()
			track = nil
		}
	}
}

// apply decodes the fetched records and applies them in order, under
// one write lock per applyChunk records: a fetch of a topic being read
// from its start holds hundreds of thousands, and the decoded ops of all
// of them at once would take hundreds of megabytes.
func (v *View) apply(fs kgo.Fetches, track *catchUp) {
	ops, ents := v.ops[:0], v.ents[:0]
	fs.EachRecord(func(rec *kgo.Record) {
		if track != nil {
			track.saw(rec.Partition, rec.Offset)
		}
		if rec.Attrs.IsControl() {
			return
		}
		op, err := decodeOp(rec, &ents)
		if err != nil {
			v.skipped.Add(1)
			v.setErr(&RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err})
			return
		}
		ops = append(ops, op)
		if len(ops) == applyChunk {
			v.applyOps(ops, ents)
			ops, ents = ops[:0], ents[:0]
		}
	})
	v.applyOps(ops, ents)
	v.ops, v.ents = ops[:0], ents[:0]
}

// applyChunk is the most records apply decodes before it applies them.
const applyChunk = 4096

// applyOps applies decoded ops in order under one write lock, then drops
// their references to names and to the fetched bytes.
func (v *View) applyOps(ops []viewOp, ents []rawEntry) {
	if len(ops) == 0 {
		return
	}
	var deleted uint64
	v.mu.Lock()
	for i := range ops {
		if v.applyOp(&ops[i], ents) {
			deleted++
		}
	}
	v.mu.Unlock()
	v.applied.Add(uint64(len(ops)) - deleted)
	v.deleted.Add(deleted)
	now := v.cfg.now()
	v.lastApplied.Store(&now)
	clear(ops)
	clear(ents)
}

// decodeOp decodes a record; a ledger record's entries go to ents and
// alias the record's bytes.
func decodeOp(rec *kgo.Record, ents *[]rawEntry) (viewOp, error) {
	switch {
	case len(rec.Key) > 0 && Kind(rec.Key[0]) == KindLedger:
		src, part, index, err := parseLedgerKey(rec.Key)
		if err != nil {
			return viewOp{}, err
		}
		op := viewOp{ledger: true, src: src, part: part, index: index, deleted: rec.Value == nil, from: len(*ents)}
		if rec.Value != nil {
			op.h, *ents, err = decodeLedgerValue(part, index, rec.Value, *ents)
		}
		op.to = len(*ents)
		return op, err
	case len(rec.Key) > 0 && Kind(rec.Key[0]) == KindBudget:
		op := viewOp{budget: true, deleted: rec.Value == nil}
		err := decodeBudgetRecord(rec.Key, rec.Value, &op.def)
		return op, err
	}
	o, err := DecodeRecord(rec.Key, rec.Value)
	return viewOp{other: &o, deleted: o.Deleted}, err
}

// applyOp applies one decoded record under the write lock; it reports
// whether the record was a tombstone.
func (v *View) applyOp(op *viewOp, ents []rawEntry) bool {
	switch {
	case op.ledger:
		// A tombstone only says its key is obsolete: what it held is
		// superseded by a higher sequence already.
		if !op.deleted {
			v.led.fold(op.src, op.part, op.index, &op.h, ents[op.from:op.to])
			if v.led.changed {
				v.led.changed = false
				v.gen++
			}
		}
	case op.budget:
		v.defs.applyBudget(&op.def, op.deleted)
	default:
		v.defs.apply(op.other)
	}
	return op.deleted
}
