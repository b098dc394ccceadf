package consumer

import (
	"context"
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
// orders.
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
	load   *checkpointLoad
	ctx    context.Context    // of the assignment: ends when the partition stops
	cancel context.CancelFunc // ends ctx
	// For the worker's status, poll loop only: lagRecords is lag's value
	// (-1 before the first fetch); commitOffset (-1 before) and
	// committedAt are the offset and time of this owner's last commit of
	// the partition (p.committed is the goroutine's while it starts).
	lagRecords, commitOffset int64
	committedAt              time.Time

	// owned by the goroutine
	src        *flow.Source
	tab        *decode.BudgetTable // the budget table lanes and counts follow
	lanes      []*flow.Lane        // by budget index
	part       *pipeline.Partition // what the stages know of the partition
	chain      *pipeline.Chain     // the pipeline built for it; nil for rewards
	ev         pipeline.Event
	counts     counts
	touched    bool      // processed records since the last commit
	nextOffset int64     // offset after the last processed record
	hold       holdState // a delay budget stopped the partition (delay.go)
	committed  stats.Checkpoint
	variants   variantState
	rewardScan *decode.Scan // the reward decoder's, in the topic's format

	// flushMu serialises flushing counts: the poll loop's last commit, at
	// shutdown, runs with rebalances allowed, so a revoke may stop (and
	// flush) a partition meanwhile.
	flushMu sync.Mutex

	toPublish atomic.Pointer[[]stats.VariantCounts] // variant counts not yet on the stats topic
}

func (w *Worker) newPartition(topic string, id int32, reward bool, load *checkpointLoad) *partition {
	ctx, cancel := context.WithCancel(w.prodCtx)
	return &partition{
		ctx:    ctx,
		cancel: cancel,
		w:      w,
		topic:  topic,
		id:     id,
		source: stats.SourceName(topic, id),
		reward: reward,
		in:     make(chan batch, w.cfg.queueBatches),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		lag:    w.m.consumerLag.WithLabelValues(topic, strconv.Itoa(int(id))),
		tab:    w.budgetTab.Load(),
		counts: newCounts(len(w.budgetTab.Load().Names())),
		load:   load,

		lagRecords: -1, commitOffset: -1,
	}
}

// checkpointLoad is the loading of the checkpoints of the partitions of
// one assignment, shared by their goroutines.
type checkpointLoad struct {
	done  chan struct{}
	cps   map[string]stats.Checkpoint
	parts map[string]int // partitions of the assigned topics, when known
	err   error
}

// start builds the partition's pipeline, waits for its checkpoint and
// opens its flow source from it. It returns false when the partition must
// not process records: it was revoked while starting, or loading failed
// (which is fatal).
func (p *partition) start() bool {
	select {
	case <-p.load.done:
	case <-p.quit:
		return false
	}
	if p.load.err != nil {
		p.w.fail(p.load.err)
		return false
	}
	cp, ok := p.load.cps[p.source]
	if !ok {
		cp = stats.Checkpoint{Source: p.source, Offset: -1}
	}
	p.committed = cp
	p.part = pipeline.NewPartition(p.topic, p.id, p.load.parts[p.topic])
	p.part.SetContext(p.ctx)
	p.load = nil
	if !p.reward {
		chain, err := p.w.pipeline.Build(p.part)
		if err != nil {
			if p.ctx.Err() == nil {
				p.w.fail(err)
			}
			return false
		}
		p.chain = chain
	}
	if err := p.open(p.w.cfg.now()); err != nil {
		p.w.fail(fmt.Errorf("open %s: %w", p.source, err))
		return false
	}
	return true
}

// open (re)opens the partition's flow source from its committed
// checkpoint.
func (p *partition) open(now time.Time) error {
	src, err := p.w.tree.Open(p.source, now, p.committed.Report)
	if err != nil {
		return err
	}
	p.src = src
	// p.tab stays as it is: the poll loop may read it (flushing counts)
	// while the partition starts; a newer table is taken in follow, at
	// the start of a batch.
	p.relane()
	p.openVariants()
	p.nextOffset = p.committed.Offset
	return nil
}

// close stops counting the source; its final reports are dropped (what
// counts is the committed checkpoint).
func (p *partition) close(now time.Time) {
	if p.src != nil {
		p.w.tree.Close(p.src, now)
		p.src = nil
	}
}

// rollback returns the partition to its committed checkpoint after an
// aborted transaction. The partition must be idle.
func (p *partition) rollback(now time.Time) error {
	p.close(now)
	p.touched = false
	for _, s := range p.kept() {
		s.Aborted()
	}
	return p.open(now)
}

// flushCounts adds the partition's counts to the worker's metrics. The
// partition must be idle.
func (p *partition) flushCounts() {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.counts.flush(p.w.m, p.tab.Names())
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
	if !p.start() {
		for range p.in { // never process, never block the poll loop
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
			if p.reward {
				p.processReward(r, b.now)
			} else {
				p.process(r, b.now)
			}
			if !p.hold.on {
				p.nextOffset = r.Offset + 1
			}
		}
		p.touched = true
		p.w.inflight.Done()
	}
}

// process runs one event through the pipeline and produces its output.
func (p *partition) process(r *kgo.Record, now time.Time) {
	w := p.w
	e := &p.ev
	e.Reset(r, now, p.source)
	o := p.chain.Run(e) // e.Topic is where it goes
	bi := e.Fields.BudgetIndex
	switch o {
	case pipeline.OutcomePass:
		if bi >= 0 {
			p.counts.offered[bi]++
			p.counts.passed[bi]++
		}
		p.variants.count(e, p.counts.routed)
		w.produceOutput(pipeline.OutputRecord(e, o, w.scored))
	case pipeline.OutcomeReject:
		if bi >= 0 && e.RejectReason != pipeline.ReasonCap { // a capped event never reached its budget
			p.counts.offered[bi]++
		}
		if e.Verdict.Pass { // passed its budget, refused after (a variant limit)
			p.countPassedRejected(e, bi)
		}
		p.counts.reject(rejectKey{e.RejectedBy, e.RejectReason})
		if e.Topic != "" {
			w.produceOutput(pipeline.OutputRecord(e, o, w.scored))
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
	p.w.produceOutput(out)
}

// processReward credits one reward record to its budget's lane.
func (p *partition) processReward(r *kgo.Record, now time.Time) {
	w := p.w
	e := &p.ev
	e.Reset(r, now, p.source)
	if p.rewardScan == nil {
		p.rewardScan = w.rewardDec.NewScan(p.topic)
	}
	if err := w.rewardDec.DecodeWith(r.Key, r.Value, r.Timestamp, &e.Fields, p.rewardScan, p.tab); err != nil {
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
	bi := e.Fields.BudgetIndex
	if !(v >= 0 && !math.IsInf(v, 0)) {
		e.Err = &decode.RecordError{Stage: StageReward, Reason: decode.ReasonRewardValue, Field: w.cfg.rewardValuePath}
		p.deadLetter(e)
		return
	}
	if bi < 0 || p.lanes[bi] == nil {
		e.Err = &decode.RecordError{Stage: StageReward, Reason: decode.ReasonUnknownBudget, Field: w.cfg.rewardBudgetPath, Detail: e.Fields.Budget}
		p.deadLetter(e)
		return
	}
	p.lanes[bi].Reward(now, v)
	p.counts.rewards[bi] += v
}

// checkpoint returns the partition's checkpoint, from the reports of the
// whole tree taken while the partition was idle.
func (p *partition) checkpoint(all []flow.Report) stats.Checkpoint {
	cp := stats.Checkpoint{Source: p.source, Offset: p.nextOffset, Variants: p.variants.snap}
	for _, r := range all {
		if r.Source == p.source {
			cp.Reports = append(cp.Reports, r)
		}
	}
	return cp
}
