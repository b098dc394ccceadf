package consumer

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// Errors of Worker.Ready and Worker.Live.
var (
	ErrNotJoined        = errors.New("not yet a member of the consumer group")
	ErrViewBehind       = errors.New("stats view not caught up")
	ErrShuttingDown     = errors.New("shutting down")
	ErrWorkerNotRunning = errors.New("worker not running")
)

// shutdownTimeout bounds the final commit and leaving the group.
const shutdownTimeout = 30 * time.Second

// connCheckTimeout bounds Run's first contact with the brokers.
const connCheckTimeout = 10 * time.Second

type topicPartition struct {
	topic     string
	partition int32
}

// Worker consumes the input and reward topics in a consumer group, runs
// every event through the pipeline, writes outputs, rejected events and dead
// letters, and keeps the flow tree's counters in step with the committed
// offsets through each partition's ledger on the stats topic.
//
// Each assigned partition has its own goroutine, the single writer of that
// partition's flow lanes and counters; the poll loop hands it batches
// through a channel and, every commit interval, waits for every partition to
// go idle, writes the ledger records of the partitions that changed (and
// heartbeats of the idle ones every sync interval) and ends the
// transaction. Its cost follows activity: a partition opens the lane of a
// budget on the budget's first event there and releases it when idle.
//
// Create one with NewWorker and call Run once.
type Worker struct {
	cfg       cfg
	tree      *flow.Tree
	dec       *decode.Decoder
	rewardDec *decode.Decoder
	pipeline  *pipeline.Pipeline // built for every input partition
	ahead     pollAhead          // the poll loop's (ahead.go)
	scored    bool

	budgetMu      sync.Mutex      // serialises UpdateBudgets and ApplyBudgets
	limits        map[string]bool // the budgets of variant limits, which events do not name
	shortestDelay atomic.Int64    // the shortest period of a delay budget, ns; 0: none
	defs          defQueue        // definitions to publish (definitions.go)
	log           zerolog.Logger
	m             *metrics
	reg           *prometheus.Registry
	http          *HTTPServer
	pub           *stats.Publisher

	sess     session
	view     *stats.View
	viewPtr  atomic.Pointer[stats.View] // view, for Ready
	clientPt atomic.Pointer[kgo.Client] // the session's client, for Pause and Resume

	delay delayState // partitions paused by delay budgets
	parks parkState  // partitions parked: their ledgers cannot be restored (park.go)

	mu    sync.Mutex // guards parts and lastCommitted
	parts map[topicPartition]*partition
	// lastCommitted is, by owned partition, the offset the last committed
	// unit of work that named it committed (sameOffset); a partition that
	// leaves the worker leaves it.
	lastCommitted map[topicPartition]kgo.EpochOffset

	// inputPartitions is the partition count of the input topics, for
	// the tree's share; refreshed when an assignment does not fit it.
	inputPartitions int
	setShare        func(float64) // the tree's SetShare; a test hook

	inflight   sync.WaitGroup     // batches handed to partitions, and chunks of outputs to the producer, not yet done
	outQ       chan []*kgo.Record // the partitions' outputs, to the producer goroutine
	prodCtx    context.Context
	prodCancel context.CancelFunc
	acks       atomic.Pointer[unitAcks]  // the current unit's records not acknowledged yet (counted at least once)
	committing atomic.Pointer[committer] // at least once: the last unit's ledgers and offsets, being written
	// commitFailed is set when a committer fails, until the session
	// starts again: the revoke of a closing session then commits no
	// offset (commitRevoked).
	commitFailed atomic.Bool
	produceErrs  atomic.Int64
	produceErr   atomic.Pointer[error]
	// aborts counts the transactions aborted for failed produces since
	// abortsSince, the last at lastAbort (poll loop only; see giveUp).
	aborts                 int
	abortsSince, lastAbort time.Time
	fatal                  atomic.Pointer[error]
	stop                   context.CancelFunc // cancels Run's loop on a fatal error

	running, joined, stopping atomic.Bool
	ran                       atomic.Bool

	// poll loop state
	nextSync time.Time
	syncReq  chan time.Time // the commits' Syncs, for the tuner (requestSync)

	status workerStatus // published every sync interval (workerstatus.go)
	srm    *srmCheck    // nil without experiments; used by the tuner
}

// NewWorker returns a worker deciding with tree and decoding with dec.
// Events may name any budget of the tree, now and after budget changes;
// the decide stage dead-letters the others (unknown budget), so the
// budgets dec lists, if any, are ignored.
func NewWorker(tree *flow.Tree, dec *decode.Decoder, opts ...Opt) (*Worker, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if tree == nil {
		return nil, &ConfigError{Option: "tree", Reason: "nil flow tree"}
	}
	if dec == nil {
		return nil, &ConfigError{Option: "decoder", Reason: "nil decoder"}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	// Ahead of the caller's options, which may set another.
	c.clientOpts = append([]kgo.Opt{kgo.MetadataMinAge(MetadataMinAge)}, c.clientOpts...)
	w := &Worker{
		cfg:     c,
		tree:    tree,
		dec:     dec,
		scored:  dec.Scored(),
		log:     c.log.With().Str("component", "consumer").Str("group", c.group).Logger(),
		parts:   map[topicPartition]*partition{},
		limits:  map[string]bool{},
		syncReq: make(chan time.Time, 1),
	}
	w.setShare = tree.SetShare
	for _, l := range c.variantLimits {
		w.limits[l.Budget] = true
	}
	tree.EachBudget(func(b *flow.Budget) { // once: delayClientOpts
		if b.Delay && (w.shortestDelay.Load() == 0 || int64(b.Period) < w.shortestDelay.Load()) {
			w.shortestDelay.Store(int64(b.Period))
		}
	})
	rd, err := decode.NewDecoder(append([]decode.Opt{decode.BudgetPath(c.rewardBudgetPath),
		decode.MaxBytes(dec.MaxBytes()), decode.MaxDepth(dec.MaxDepth())}, c.rewardDecoding...)...)
	if err != nil {
		return nil, err
	}
	w.rewardDec = rd
	w.reg = c.registry
	if w.reg == nil {
		w.reg = prometheus.NewRegistry()
	}
	if w.pipeline, err = w.newPipeline(); err != nil {
		return nil, err
	}
	if w.pub, err = stats.NewPublisher(c.topics.Stats); err != nil {
		return nil, err
	}
	w.m = newMetrics(w.reg, c.budgetSeries)
	// Every client the worker makes from its options counts its requests.
	c.clientOpts = append(slices.Clip(c.clientOpts), kgo.WithHooks(requestHook{w.m}))
	w.cfg.clientOpts = c.clientOpts
	w.m.series.now = c.now()
	w.srm = newSRMCheck(w.reg, c.splitter)
	w.delay.init(w.reg)
	w.parks.init(w.reg)
	if c.delivery == AtLeastOnce {
		w.acks.Store(newUnitAcks(w.produced))
	} else {
		w.acks.Store(uncountedAcks(w.produced))
	}
	if c.listen != "" {
		if w.http, err = NewHTTPServer(c.listen, w.reg, w, c.httpSec); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// newPipeline assembles the standard pipeline of the worker's options
// (pipeline.Standard) and lets CustomizePipeline change it.
func (w *Worker) newPipeline() (*pipeline.Pipeline, error) {
	c := &w.cfg
	for _, l := range c.variantLimits {
		if _, ok := w.tree.Budget(l.Budget); !ok {
			return nil, &ConfigError{Option: "WithVariantLimits", Reason: "budget " + l.Budget + " of variant " + l.Layer + "/" + l.Experiment + "/" + l.Variant + " is not in the flow tree"}
		}
	}
	var caps *pipeline.Caps
	if c.caps != nil {
		var err error
		if caps, err = pipeline.NewCaps(c.caps.changelog, c.caps.specs, c.clientOpts, w.reg, w.log); err != nil {
			return nil, err
		}
	}
	p, err := pipeline.Standard(pipeline.Spec{
		Decoder:       w.dec,
		Splitter:      c.splitter,
		Router:        pipeline.Router{Output: c.topics.Output, Rejected: c.topics.Rejected, DeadLetter: c.topics.DeadLetter},
		DedupWindow:   c.dedupWindow,
		Caps:          caps,
		VariantLimits: c.variantLimits,
	})
	if err != nil {
		return nil, err
	}
	if c.pipeline != nil {
		if err := c.pipeline(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Gatherer returns the registry holding the worker's metrics.
func (w *Worker) Gatherer() prometheus.Gatherer { return w.reg }

// HTTPAddr returns the address of the metrics and health server, or nil
// without HTTPListen.
func (w *Worker) HTTPAddr() net.Addr {
	if w.http == nil {
		return nil
	}
	return w.http.Addr()
}

// Live reports whether Run is running (nil) or not.
func (w *Worker) Live() error {
	if !w.running.Load() {
		return ErrWorkerNotRunning
	}
	return nil
}

// Ready is nil once the worker has joined its group and its stats view has
// caught up, until it starts shutting down, while every ReadyCheck is and
// no partition is parked (park.go).
func (w *Worker) Ready() error {
	switch {
	case !w.running.Load():
		return ErrWorkerNotRunning
	case w.stopping.Load():
		return ErrShuttingDown
	case w.viewPtr.Load() == nil || !w.viewPtr.Load().CaughtUp():
		return ErrViewBehind
	case !w.joined.Load():
		return ErrNotJoined
	}
	for _, check := range w.cfg.readyChecks {
		if err := check(); err != nil {
			return err
		}
	}
	return w.parkedErr()
}

// Pause stops fetching the given partitions of topic (all of the topic's
// assigned partitions when none are named) until Resume; records already
// fetched are still processed. A hook for backpressure.
func (w *Worker) Pause(topic string, partitions ...int32) {
	cl := w.clientPt.Load()
	if cl == nil {
		return
	}
	if len(partitions) == 0 {
		cl.PauseFetchTopics(topic)
		return
	}
	cl.PauseFetchPartitions(map[string][]int32{topic: partitions})
}

// Resume undoes Pause.
func (w *Worker) Resume(topic string, partitions ...int32) {
	cl := w.clientPt.Load()
	if cl == nil {
		return
	}
	if len(partitions) == 0 {
		cl.ResumeFetchTopics(topic)
		return
	}
	cl.ResumeFetchPartitions(map[string][]int32{topic: partitions})
}

// produce writes r in the current unit of work.
func (w *Worker) produce(r *kgo.Record) {
	w.produceOn(w.sess.client(), r)
}

// produceOn produces r on cl, counted in the current unit's acks at
// least once. Only the poll loop's goroutine and the producer goroutine
// call it, the latter for the chunks the loop waits for (inflight)
// before it starts the next unit's acks.
func (w *Worker) produceOn(cl *kgo.Client, r *kgo.Record) {
	w.acks.Load().produce(w.prodCtx, cl, r)
}

// unitAcks counts one unit of work's records until kgo acknowledges
// them (or fails them), each answer passed on to done. Uncounted (an
// exactly-once worker's: its transaction's end flushes), it only passes
// them on.
type unitAcks struct {
	counted bool
	wg      sync.WaitGroup
	promise func(*kgo.Record, error)
}

func newUnitAcks(done func(*kgo.Record, error)) *unitAcks {
	a := &unitAcks{counted: true}
	a.promise = func(r *kgo.Record, err error) {
		done(r, err)
		a.wg.Done()
	}
	return a
}

func uncountedAcks(done func(*kgo.Record, error)) *unitAcks {
	return &unitAcks{promise: done}
}

func (a *unitAcks) produce(ctx context.Context, cl *kgo.Client, r *kgo.Record) {
	if a.counted {
		a.wg.Add(1)
	}
	cl.Produce(ctx, r, a.promise)
}

// wait waits for every record produced, at most timeout, and reports
// whether they were all answered. A wait that times out leaves a
// goroutine waiting: it ends when the session's client closes, which
// fails what it still buffers.
func (a *unitAcks) wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// producer is the goroutine that produces the partitions' outputs, chunk
// by chunk, until outQ closes. kgo's Produce costs about as much as
// deciding an event, and blocks while the client buffers
// kgo.MaxBufferedRecords: done here, it overlaps with the partition
// goroutines' decoding and deciding instead of adding to it (throttler
// bench: docs/results.md). One goroutine keeps each partition's outputs in
// their order.
func (w *Worker) producer() {
	for rs := range w.outQ {
		cl := w.sess.client()
		for _, r := range rs {
			w.produceOn(cl, r)
		}
		w.inflight.Done()
	}
}

func (w *Worker) produced(r *kgo.Record, err error) {
	if err != nil {
		if w.produceErrs.Add(1) == 1 {
			w.produceErr.Store(&err)
		}
	}
}

// isReward reports whether topic is a reward topic.
func (w *Worker) isReward(topic string) bool {
	for _, t := range w.cfg.topics.Rewards {
		if t == topic {
			return true
		}
	}
	return false
}

// Topics returns the worker's topics (WithTopics).
func (w *Worker) Topics() Topics { return w.cfg.topics }

// Budgets returns the budgets of the worker's flow tree. It costs
// O(budgets) under the tree's lock: for a start, not a periodic path.
func (w *Worker) Budgets() []flow.Budget { return w.tree.Budgets() }

// Budget returns the budget of that name in the worker's flow tree, if
// any.
func (w *Worker) Budget(name string) (flow.Budget, bool) { return w.tree.Budget(name) }

// BudgetCount returns the number of budgets of the worker's flow tree.
func (w *Worker) BudgetCount() int { return w.tree.Len() }

// Registerer returns the registry of the worker's metrics, for what runs
// beside it (OnStart).
func (w *Worker) Registerer() prometheus.Registerer { return w.reg }

// Logger returns the worker's logger.
func (w *Worker) Logger() zerolog.Logger { return w.log }

// ClientOpts returns the worker's connection options (ClientOpts).
func (w *Worker) ClientOpts() []kgo.Opt { return w.cfg.clientOpts }
