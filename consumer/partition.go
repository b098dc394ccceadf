package consumer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// batch is a run of records of one partition, as polled.
type batch struct {
	recs []*kgo.Record
	now  time.Time
}

// partition is the state of one assigned partition (of an input or a
// reward topic). Its goroutine is the single writer of everything below
// "owned by the goroutine"; the poll loop touches those fields only while
// the partition is idle (after Worker.inflight.Wait), which the WaitGroup
// orders, and only once ready says the goroutine has opened them.
type partition struct {
	w      *Worker
	topic  string
	id     int32
	source string
	reward bool
	in     chan batch
	quit   chan struct{} // closed to stop a partition still loading
	done   chan struct{}
	lag    prometheus.Gauge
	load   *ledgerLoad
	ctx    context.Context    // of the assignment: ends when the partition stops
	cancel context.CancelFunc // ends ctx
	ready  atomic.Bool        // the goroutine opened led, src and part
	drops  drops              // budgets deleted since, to drop from the ledger (budgets.go)
	// For the worker's status, poll loop only: lagRecords is lag's value
	// (-1 before the first fetch); commitOffset (-1 before) and
	// committedAt are the offset and time of this owner's last commit of
	// the partition.
	lagRecords, commitOffset int64
	committedAt              time.Time

	// owned by the goroutine
	led        *stats.Ledger       // the source's committed counters, written at every commit
	src        *flow.Source        // its lanes, opened on demand and restored from led
	part       *pipeline.Partition // what the stages know of the partition
	chain      *pipeline.Chain     // the pipeline built for it; nil for rewards
	ev         pipeline.Event
	recs       pipeline.Records // the output records' memory
	counts     counts
	touched    bool      // processed records since the last commit
	nextOffset int64     // offset after the last processed record
	skipBelow  int64     // records below it are in the ledger already (see start)
	started    bool      // a record was seen since the partition started
	hold       holdState // a delay budget stopped the partition (delay.go)
	variants   variantState
	out        []*kgo.Record // outputs not handed to the producer goroutine yet (emit)
	reps       []flow.Report // Source.Changed's, reused
	forgetAt   time.Time     // when the ledger is next looked at for counters to forget (ledger.go)
	rewardScan *decode.Scan  // the reward decoder's, in the topic's format
	parkAt     int64         // parked: the offset it holds at (-1 before its first record; park.go)
	parkEpoch  int32

	// flushMu serialises flushing counts: the poll loop's last commit, at
	// shutdown, runs with rebalances allowed, so a revoke may stop (and
	// flush) a partition meanwhile.
	flushMu sync.Mutex
}

func (w *Worker) newPartition(topic string, id int32, reward bool, load *ledgerLoad) *partition {
	ctx, cancel := context.WithCancel(w.prodCtx)
	return &partition{
		ctx:    ctx,
		cancel: cancel,
		w:      w,
		topic:  topic,
		id:     id,
		source: stats.SourceName(topic, id),
		reward: reward,
		in:     make(chan batch, DefaultQueueBatches),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		lag:    w.m.consumerLag.WithLabelValues(topic, strconv.Itoa(int(id))),
		counts: newCounts(),
		load:   load,
		parkAt: -1,

		lagRecords: -1, commitOffset: -1,
	}
}

// ledgerLoad is the loading of the ledgers of the partitions of one
// assignment, shared by their goroutines.
type ledgerLoad struct {
	done   chan struct{}
	states map[string]stats.LedgerState
	parts  map[string]int // partitions of the assigned topics, when known
	err    error
}

// How a partition's start ended.
const (
	startStopped = iota // revoked while starting, or a fatal error
	startRunning
	startParked // its ledger cannot be restored whole (park.go)
)

// start builds the partition's pipeline, waits for its ledger and opens
// its flow source from it. It returns startRunning when the partition
// may process records; startParked when its ledger cannot be restored
// whole; startStopped when it was revoked while starting, or failed
// (which is fatal).
func (p *partition) start() int {
	select {
	case <-p.load.done:
	case <-p.quit:
		return startStopped
	}
	if p.load.err != nil {
		p.w.fail(p.load.err)
		return startStopped
	}
	st, ok := p.load.states[p.source]
	if !ok {
		st = stats.LedgerState{Source: p.source, Offset: -1}
	}
	led, err := stats.NewLedger(p.w.cfg.topics.Stats, st, p.w.view.Seq(p.source), p.w.ledgerOpts()...)
	var problem *stats.LedgerProblem
	if errors.As(err, &problem) || errors.Is(err, stats.ErrSequenceExhausted) {
		p.park(err, max(len(st.Problems), 1))
		p.load = nil
		return startParked
	}
	if err != nil {
		p.w.fail(fmt.Errorf("ledger of %s: %w", p.source, err))
		return startStopped
	}
	p.led = led
	p.logRestore(st)
	p.drops.restored(p.w, st)
	p.part = pipeline.NewPartition(p.topic, p.id, p.load.parts[p.topic])
	p.part.SetContext(p.ctx)
	p.load = nil
	if !p.reward {
		chain, err := p.w.pipeline.Build(p.part)
		if err != nil {
			if p.ctx.Err() == nil {
				p.w.fail(err)
			}
			return startStopped
		}
		p.chain = chain
	}
	if err := p.open(p.w.cfg.now()); err != nil {
		p.w.fail(fmt.Errorf("open %s: %w", p.source, err))
		return startStopped
	}
	// At least once, the ledger may be ahead of the group's offset: a
	// crash after the ledger was written, before the offsets were. The
	// records in between are counted, and their outputs written (the
	// ledger is written only once they are; see Worker.write).
	p.skipBelow = p.nextOffset
	p.ready.Store(true)
	return startRunning
}

// logRestore logs, at info level, the committed ledger the partition
// counts from: its input offset, its sequence and the passes of its
// budgets, which a new owner continues from.
func (p *partition) logRestore(st stats.LedgerState) {
	e := p.w.log.Info()
	if !e.Enabled() {
		return
	}
	var passed uint64
	for _, r := range st.Reports {
		passed += r.Total.Passed
	}
	e.Str("source", p.source).Int64("offset", st.Offset).Uint64("seq", st.Seq).
		Int("budgets", len(st.Reports)).Uint64("passed", passed).Msg("partition started from its ledger")
}

// open (re)opens the partition's flow source from its committed ledger.
func (p *partition) open(now time.Time) error {
	src, err := p.w.tree.Open(p.source, now, p.led.Report)
	if err != nil {
		return err
	}
	p.src = src
	p.setLanes()
	p.variants.restore(p.led.Variants())
	p.nextOffset = p.led.Offset()
	return nil
}

// close stops counting the source and returns the final reports of its
// lanes (what counts is the committed ledger).
func (p *partition) close(now time.Time) []flow.Report {
	if p.src == nil {
		return nil
	}
	reps := p.w.tree.Close(p.src, now)
	p.src = nil
	return reps
}

// lose stops counting the source of a partition the group took from this
// worker (see flow.Tree.Lose): what it counted since its last commit is
// void, and another worker may have owned it since.
func (p *partition) lose(now time.Time) {
	if p.src == nil {
		return
	}
	p.w.tree.Lose(p.src, now)
	p.src = nil
}

// rollback returns the partition to its committed ledger after an aborted
// transaction. The partition must be idle.
//
// The lanes that were open open again at once, from the ledger: a closed
// lane stays its controller's report of the source until the source opens
// a lane again, and this one counted what the abort took back; left so
// until the budget's next event, it would make the source's committed
// counters, read from the stats view at the next sync, look like counters
// going backwards.
func (p *partition) rollback(now time.Time) error {
	if p.led == nil { // parked: nothing to roll back
		p.touched = false
		return nil
	}
	reps := p.close(now)
	p.touched = false
	p.led.Rollback()
	p.drops.aborted()
	for _, s := range p.kept() {
		s.Aborted()
	}
	if err := p.open(now); err != nil {
		return err
	}
	for _, r := range reps {
		p.src.Lane(r.Budget)
	}
	return nil
}

// flushCounts adds the partition's counts to the worker's metrics. The
// partition must be idle.
func (p *partition) flushCounts() {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.counts.flush(p.w.m)
}

// kept returns the states the partition's stages keep with its
// transactions (none before the partition started).
func (p *partition) kept() []pipeline.State {
	if p.part == nil {
		return nil
	}
	return p.part.Kept()
}

// run is the partition goroutine.
func (p *partition) run() {
	defer close(p.done)
	switch p.start() {
	case startStopped:
		for range p.in { // never process, never block the poll loop
			p.w.inflight.Done()
		}
		return
	case startParked:
		for b := range p.in { // hold at the committed offset, process nothing
			p.holdParked(b)
			p.w.inflight.Done()
		}
		return
	}
	for b := range p.in {
		p.follow(b.now)
		for _, r := range b.recs {
			if p.hold.on {
				break // the commit rewinds to the held record
			}
			if r.Offset < p.skipBelow {
				continue
			}
			if !p.started {
				p.started = true
				p.checkStart(r.Offset)
			}
			if p.reward {
				p.processReward(r, b.now)
			} else {
				p.process(r, b.now)
			}
			if !p.hold.on {
				p.nextOffset = r.Offset + 1
			}
		}
		p.sendOut()
		p.touched = true
		p.w.inflight.Done()
	}
}

// checkStart warns when the partition's first record comes after its
// ledger's offset: records in between were processed (their outputs are
// written) but not counted. Exactly once, the group's offset and the
// ledger's are committed together and this cannot happen; at least once,
// it means the offsets were committed without the ledger (by a tool, by
// hand, or by a deployment that wrote no ledgers).
func (p *partition) checkStart(first int64) {
	if ledger := p.led.Offset(); ledger >= 0 && first > ledger {
		p.w.log.Warn().Str("source", p.source).Int64("ledger_offset", ledger).Int64("first_offset", first).
			Msg("the group's offset is ahead of the partition's ledger: the records in between are not counted")
	}
}

// process runs one event through the pipeline and produces its output.
func (p *partition) process(r *kgo.Record, now time.Time) {
	w := p.w
	e := &p.ev
	e.Reset(r, now, p.source)
	o := p.chain.Run(e) // e.Topic is where it goes
	// decided: the event reached its budget's lane (a capped event, a
	// bad one, or one of an unknown budget did not).
	decided := e.Verdict.Pass || e.Verdict.Reason != flow.ReasonPass
	switch o {
	case pipeline.OutcomePass:
		if decided {
			c := p.counts.budget(e.Fields.Budget)
			c.offered++
			c.passed++
		}
		p.variants.count(e, p.counts.routed)
		p.emit(p.recs.Output(e, o, w.scored))
	case pipeline.OutcomeReject:
		switch {
		case e.Verdict.Pass: // passed its budget, refused after (a variant limit)
			p.countPassedRejected(e)
			p.counts.reject(rejectKey{e.RejectedBy, e.RejectReason})
		case decided && e.RejectedBy == e.Fields.Budget:
			// refused by its own budget: counted on the counters just found
			b := p.counts.budget(e.Fields.Budget)
			b.offered++
			b.refused(e.RejectReason)
		case decided:
			p.counts.budget(e.Fields.Budget).offered++
			p.counts.reject(rejectKey{e.RejectedBy, e.RejectReason})
		default:
			p.counts.reject(rejectKey{e.RejectedBy, e.RejectReason})
		}
		if e.Topic != "" {
			p.emit(p.recs.Output(e, o, w.scored))
		} else {
			p.counts.dropped++
		}
	case pipeline.OutcomeDrop:
		p.counts.dropped++
	case pipeline.OutcomeDelay:
		p.holdBack(r, e)
	default: // OutcomeDeadLetter
		p.deadLetter(e)
	}
}

func (p *partition) deadLetter(e *pipeline.Event) {
	p.counts.dead[e.Err.Reason]++
	p.w.log.Debug().Str("source", p.source).Int64("offset", e.Record.Offset).
		Str("stage", e.Err.Stage).Str("reason", string(e.Err.Reason)).Msg("dead letter")
	e.Topic = p.w.cfg.topics.DeadLetter
	out := pipeline.OutputRecord(e, pipeline.OutcomeDeadLetter, false)
	pipeline.FitDeadLetter(out, len(e.Record.Headers), p.w.dec.MaxBytes())
	p.emit(out)
}

// processReward credits one reward record to its budget's lane.
func (p *partition) processReward(r *kgo.Record, now time.Time) {
	w := p.w
	e := &p.ev
	e.Reset(r, now, p.source)
	if p.rewardScan == nil {
		p.rewardScan = w.rewardDec.NewScan(p.topic)
	}
	if err := w.rewardDec.DecodeWith(r.Key, r.Value, r.Timestamp, &e.Fields, p.rewardScan); err != nil {
		if we, ok := err.(*decode.WaitError); ok { // its schema: wait
			e.RetryAt = now.Add(we.RetryAfter)
			p.holdBack(r, e)
			return
		}
		re := err.(*decode.RecordError)
		re.Stage = StageReward
		e.Err = re
		p.deadLetter(e)
		return
	}
	v := 1.0
	if path := w.cfg.rewardValuePath; path != "" {
		res := e.Fields.Field(r.Value, path)
		switch res.Type {
		case gjson.Number:
			v = res.Num
		case gjson.Null: // absent: counts 1
		default:
			v = math.NaN()
		}
	}
	if !(v >= 0 && !math.IsInf(v, 0)) {
		e.Err = &decode.RecordError{Stage: StageReward, Reason: decode.ReasonRewardValue, Field: w.cfg.rewardValuePath}
		p.deadLetter(e)
		return
	}
	if v > w.cfg.maxReward {
		e.Err = &decode.RecordError{Stage: StageReward, Reason: decode.ReasonRewardRange, Field: w.cfg.rewardValuePath,
			Detail: fmt.Sprintf("%g above the maximum %g", v, w.cfg.maxReward)}
		p.deadLetter(e)
		return
	}
	l := p.eventLane(e.Fields.Budget, now)
	if l == nil {
		e.Err = &decode.RecordError{Stage: StageReward, Reason: decode.ReasonUnknownBudget, Field: w.cfg.rewardBudgetPath, Detail: e.Fields.Budget}
		p.deadLetter(e)
		return
	}
	l.Reward(now, v)
	p.counts.budget(e.Fields.Budget).rewards += v
}

// outChunk is how many outputs a partition hands to the worker's producer
// goroutine at a time.
const outChunk = 256

// emit queues an output record for the worker's producer goroutine, which
// produces the partition's outputs in the order they were emitted.
func (p *partition) emit(r *kgo.Record) {
	p.out = append(p.out, r)
	if len(p.out) >= outChunk {
		p.sendOut()
	}
}

// sendOut hands the queued outputs to the producer goroutine. A commit
// waits for them to be produced (Worker.inflight) as for the batches.
func (p *partition) sendOut() {
	if len(p.out) == 0 {
		return
	}
	p.w.inflight.Add(1)
	p.w.outQ <- p.out
	p.out = make([]*kgo.Record, 0, outChunk)
}
