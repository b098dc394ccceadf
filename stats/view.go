package stats

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// View is the cluster view: the newest report of every budget x source,
// kept in memory by following the whole stats topic from its start with a
// consumer of its own (read_committed, no group, every partition).
//
// The newest record of a key wins, in the topic's offset order; a tombstone
// removes the key. Records that cannot be decoded (corrupt, or written by a
// newer major version) are skipped and counted in Stats.
//
// A View is safe for concurrent use by many goroutines. It implements the
// read side of flow.Exchange; Exchange adds the write side. The zero value
// is not usable: create one with NewView, and Close it.
type View struct {
	topic   string
	cfg     cfg
	cl      *kgo.Client
	adm     *kadm.Client
	created time.Time

	mu      sync.RWMutex
	budgets map[string][]flow.Report // by budget, sorted by source
	defs    definitions              // kinds 2-4 (definitions.go)

	caught      chan struct{} // closed once caught up
	caughtUp    atomic.Bool
	lastApplied atomic.Pointer[time.Time] // cfg.now() at the last apply; nil: none yet

	applied, deleted, skipped, fetchErrs atomic.Uint64
	lastErr                              atomic.Pointer[errBox]

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	ops       []viewOp // reused by the reading goroutine only
}

type errBox struct{ err error }

type viewOp struct {
	r       flow.Report
	deleted bool
	other   *Record // a record of kind 2-4, else nil
}

// ViewStats are a View's counters, for the caller's metrics.
type ViewStats struct {
	Applied     uint64 // records applied (reports and the other kinds)
	Deleted     uint64 // tombstones applied
	Skipped     uint64 // records that could not be decoded
	FetchErrors uint64 // fetch errors the client reported (it retries on its own)
	LastError   error  // the newest decode (*RecordError) or fetch (*TopicError) error, or nil
	Budgets     int    // budgets known
	Sources     int    // budget x source pairs known
}

// NewView starts following topic. clientOpts are the caller's connection
// options (seed brokers, TLS, SASL, dialer); the View creates its own
// client from them and adds its consuming options, so they must not name a
// consumer group. ctx bounds only the start (listing the topic's offsets);
// the View runs until Close.
//
// NewView fails with a *TopicError wrapping ErrTopicNotFound when the topic
// does not exist: create it first with EnsureTopics.
func NewView(ctx context.Context, topic string, clientOpts []kgo.Opt, opts ...Opt) (*View, error) {
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
		budgets: make(map[string][]flow.Report),
		caught:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	starts, ends, err := listOffsets(ctx, v.adm, topic)
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

// View appends to dst the newest report of every source of budget, sorted
// by source, and returns the extended slice. It implements
// flow.Exchange.View.
func (v *View) View(budget string, dst []flow.Report) []flow.Report {
	v.mu.RLock()
	dst = append(dst, v.budgets[budget]...)
	v.mu.RUnlock()
	return dst
}

// Report returns the newest report of budget x source, if the View has one.
func (v *View) Report(budget, source string) (flow.Report, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	rs := v.budgets[budget]
	if i, ok := searchSource(rs, source); ok {
		return rs[i], true
	}
	return flow.Report{}, false
}

// Budgets returns the budgets the View has reports for, sorted.
func (v *View) Budgets() []string {
	v.mu.RLock()
	out := make([]string, 0, len(v.budgets))
	for b := range v.budgets {
		out = append(out, b)
	}
	v.mu.RUnlock()
	sort.Strings(out)
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
	s.Budgets = len(v.budgets)
	for _, rs := range v.budgets {
		s.Sources += len(rs)
	}
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
			if starts, _, err := listOffsets(v.ctx, v.adm, v.topic); err == nil {
				track.starts(starts)
			}
		}
		if track.done() {
			v.markCaughtUp()
			track = nil
		}
	}
}

// apply decodes the fetched records, then applies them in order under one
// write lock.
func (v *View) apply(fs kgo.Fetches, track *catchUp) {
	ops := v.ops[:0]
	fs.EachRecord(func(rec *kgo.Record) {
		if track != nil {
			track.saw(rec.Partition, rec.Offset)
		}
		if rec.Attrs.IsControl() {
			return
		}
		if len(rec.Key) > 0 && Kind(rec.Key[0]) != KindReport {
			o, err := DecodeRecord(rec.Key, rec.Value)
			if err != nil {
				v.skipped.Add(1)
				v.setErr(&RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err})
				return
			}
			ops = append(ops, viewOp{other: &o, deleted: o.Deleted})
			return
		}
		r, deleted, err := DecodeReport(rec.Key, rec.Value)
		if err != nil {
			v.skipped.Add(1)
			v.setErr(&RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err})
			return
		}
		ops = append(ops, viewOp{r: r, deleted: deleted})
	})
	v.ops = ops[:0]
	if len(ops) == 0 {
		return
	}
	var applied, deleted uint64
	v.mu.Lock()
	for _, op := range ops {
		if op.other != nil {
			if op.deleted {
				deleted++
			} else {
				applied++
			}
			v.defs.apply(op.other)
			continue
		}
		rs := v.budgets[op.r.Budget]
		i, found := searchSource(rs, op.r.Source)
		switch {
		case op.deleted:
			deleted++
			if !found {
				continue
			}
			rs = slices.Delete(rs, i, i+1)
			if len(rs) == 0 {
				delete(v.budgets, op.r.Budget)
				continue
			}
		case found:
			applied++
			rs[i] = op.r
		default:
			applied++
			rs = slices.Insert(rs, i, op.r)
		}
		v.budgets[op.r.Budget] = rs
	}
	v.mu.Unlock()
	clear(ops) // drop references to names
	v.applied.Add(applied)
	v.deleted.Add(deleted)
	now := v.cfg.now()
	v.lastApplied.Store(&now)
}

func searchSource(rs []flow.Report, source string) (int, bool) {
	return slices.BinarySearchFunc(rs, source, func(r flow.Report, s string) int {
		return strings.Compare(r.Source, s)
	})
}
