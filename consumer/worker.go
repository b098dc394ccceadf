package consumer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/kafkaconn"
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
// offsets through per-partition checkpoints.
//
// Each assigned partition has its own goroutine, the single writer of that
// partition's flow lanes and counters; the poll loop hands it batches
// through a channel and, every commit interval, waits for every partition to
// go idle, writes one checkpoint per touched partition (plus the stats
// records every sync interval) and ends the transaction.
//
// Create one with NewWorker and call Run once.
type Worker struct {
	cfg       cfg
	tree      *flow.Tree
	dec       *Decoder
	rewardDec *Decoder
	handler   Handler
	scored    bool

	control   *controlState               // nil without a control topic
	budgetMu  sync.Mutex                  // serialises UpdateBudgets
	budgetTab atomic.Pointer[budgetTable] // swapped by UpdateBudgets
	log       zerolog.Logger
	m         *metrics
	reg       *prometheus.Registry
	http      *HTTPServer
	pub       *stats.Publisher
	caps      *capSet // nil without caps

	sess     session
	view     *stats.View
	viewPtr  atomic.Pointer[stats.View] // view, for Ready
	clientPt atomic.Pointer[kgo.Client] // the session's client, for Pause and Resume

	delay delayState // partitions paused by delay budgets

	mu    sync.Mutex // guards parts
	parts map[topicPartition]*partition

	// inputPartitions is the partition count of the input topics, for
	// the tree's share; refreshed when an assignment does not fit it.
	inputPartitions int
	setShare        func(float64) // the tree's SetShare; a test hook

	inflight    sync.WaitGroup // batches handed to partitions and not yet processed
	prodCtx     context.Context
	prodCancel  context.CancelFunc
	onProduced  func(*kgo.Record, error)
	onOutput    func(*kgo.Record, error) // onProduced, then back to the pool
	produceErrs atomic.Int64
	produceErr  atomic.Pointer[error]
	// aborts counts the transactions aborted for failed produces since
	// abortsSince, the last at lastAbort (poll loop only; see giveUp).
	aborts                 int
	abortsSince, lastAbort time.Time
	fatal                  atomic.Pointer[error]
	stop                   context.CancelFunc // cancels Run's loop on a fatal error

	running, joined, stopping atomic.Bool
	ran                       atomic.Bool

	// poll loop state
	reports  []flow.Report
	nextSync time.Time

	srm                   *srmCheck         // nil without experiments; used by the tuner
	defsSent, defsPending map[string]string // definition records by key (experiments.go)
	defsGone              map[string]bool
}

// NewWorker returns a worker deciding with tree and decoding with dec. The
// decoder's budgets must all exist in the tree; they are the budgets events
// may name.
func NewWorker(tree *flow.Tree, dec *Decoder, opts ...Opt) (*Worker, error) {
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
	budgets := dec.Budgets()
	if len(budgets) == 0 {
		return nil, &ConfigError{Option: "decoder", Reason: "the decoder lists no budgets"}
	}
	for _, b := range budgets {
		if tree.Controller(b) == nil {
			return nil, &ConfigError{Option: "decoder", Reason: "budget " + b + " is not in the flow tree"}
		}
	}
	w := &Worker{
		cfg:    c,
		tree:   tree,
		dec:    dec,
		scored: dec.Scored(),
		log:    c.log.With().Str("component", "consumer").Str("group", c.group).Logger(),
		parts:  map[topicPartition]*partition{},
	}
	w.setShare = tree.SetShare
	w.budgetTab.Store(dec.tab)
	rd, err := NewDecoder(budgets, BudgetPath(c.rewardBudgetPath), MaxBytes(dec.cfg.maxBytes), MaxDepth(dec.cfg.maxDepth))
	if err != nil {
		return nil, err
	}
	w.rewardDec = rd
	p := StandardPipeline(dec, c.splitter, c.topics.Output)
	if err := w.useVariantLimits(p); err != nil {
		return nil, err
	}
	if c.dedupWindow > 0 {
		if dec.cfg.idPath == "" {
			return nil, &ConfigError{Option: "DedupWindow", Reason: "needs the decoder's IDPath"}
		}
		if err := p.Insert(StageScore, Stage{StageDedup, DedupStage(c.dedupWindow)}); err != nil {
			return nil, err
		}
	}
	if c.pipeline != nil {
		if err := c.pipeline(p); err != nil {
			return nil, err
		}
	}
	w.handler = p.Handler()
	if w.pub, err = stats.NewPublisher(c.topics.Stats); err != nil {
		return nil, err
	}
	w.reg = c.registry
	if w.reg == nil {
		w.reg = prometheus.NewRegistry()
	}
	w.m = newMetrics(w.reg)
	if w.caps, err = newCapSet(c.caps, w.reg, w.log); err != nil {
		return nil, err
	}
	w.srm = newSRMCheck(w.reg, c.splitter)
	w.delay.init(w.reg)
	w.onProduced = w.produced
	w.onOutput = func(r *kgo.Record, err error) {
		w.produced(r, err)
		releaseRecord(r)
	}
	if c.listen != "" {
		if w.http, err = NewHTTPServer(c.listen, w.reg, w); err != nil {
			return nil, err
		}
	}
	return w, nil
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
// caught up, until it starts shutting down.
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
	return nil
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

// Run consumes until ctx ends or a fatal error, then finishes the records
// in flight, commits, leaves the group and returns (nil after a clean
// shutdown). Run may be called once.
func (w *Worker) Run(ctx context.Context) (err error) {
	if !w.ran.CompareAndSwap(false, true) {
		return ErrClosed
	}
	w.running.Store(true)
	defer w.running.Store(false)
	w.prodCtx, w.prodCancel = context.WithCancel(context.Background())
	defer w.prodCancel()

	if w.http != nil {
		go func() {
			if err := w.http.Serve(); err != nil {
				w.log.Error().Err(err).Msg("http server")
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = w.http.Shutdown(sctx)
		}()
	}

	// Rejected credentials or a TLS mismatch would otherwise show up as
	// clients retrying EOFs forever.
	if err := kafkaconn.Check(ctx, w.cfg.clientOpts, connCheckTimeout); kafkaconn.Fatal(err) {
		return err
	}
	if w.cfg.ensureTopics {
		if err := w.ensureTopics(ctx); err != nil {
			return err
		}
	}
	view, err := stats.NewView(ctx, w.cfg.topics.Stats, slices.Concat(w.cfg.clientOpts, w.cfg.statsClientOpts))
	if err != nil {
		return fmt.Errorf("stats view: %w", err)
	}
	w.view = view
	w.viewPtr.Store(view)
	defer view.Close()
	if err := view.WaitCaughtUp(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("stats view: %w", err)
	}
	if err := w.startControl(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer w.stopControl()
	w.tree.Sync(w.cfg.now(), viewExchange{view})

	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	w.stop = stop
	if w.sess, err = w.newSession(); err != nil {
		return err
	}
	w.clientPt.Store(w.sess.client())
	defer w.clientPt.Store(nil)
	if err := w.sess.begin(); err != nil {
		w.sess.close()
		return fmt.Errorf("begin transaction: %w", err)
	}
	w.log.Info().Str("delivery", w.cfg.delivery.String()).Strs("input", w.cfg.topics.Input).Msg("worker started")

	tunerDone := make(chan struct{})
	go w.tuner(loopCtx, tunerDone)

	err = w.runSessions(loopCtx)
	w.stopping.Store(true)
	stop()
	<-tunerDone
	if ferr := w.fatal.Load(); ferr != nil && err == nil {
		err = *ferr
	}

	// Leave the group: the revoke callback stops every partition.
	w.sess.close()
	w.closeAll()
	w.log.Info().Err(err).Msg("worker stopped")
	return err
}

// fail records a fatal error and stops the loop.
func (w *Worker) fail(err error) {
	w.fatal.CompareAndSwap(nil, &err)
	if w.stop != nil {
		w.stop()
	}
}

func (w *Worker) ensureTopics(ctx context.Context) error {
	cl, err := kgo.NewClient(w.cfg.clientOpts...)
	if err != nil {
		return &ConfigError{Option: "ClientOpts", Reason: err.Error()}
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	consumed := append(append([]string(nil), w.cfg.topics.Input...), w.cfg.topics.Rewards...)
	details, err := adm.ListTopics(ctx, consumed...)
	if err != nil {
		return fmt.Errorf("list input topics: %w", err)
	}
	parts := int32(1)
	for _, t := range consumed {
		d, ok := details[t]
		if !ok || d.Err != nil {
			return fmt.Errorf("input topic %s: %w", t, errors.Join(errors.New("not found"), d.Err))
		}
		if n := int32(len(d.Partitions)); n > parts {
			parts = n
		}
	}
	specs := []stats.TopicSpec{
		stats.StatsTopic(w.cfg.topics.Stats, parts),
		stats.CheckpointTopic(w.cfg.topics.Checkpoints, parts),
	}
	if t := w.cfg.topics.Control; t != "" {
		specs = append(specs, control.Topic(t))
	}
	// The topics the worker writes to: created with the input's partition
	// count when missing (brokers need not auto-create topics).
	seen := map[string]bool{w.cfg.topics.Stats: true, w.cfg.topics.Checkpoints: true, w.cfg.topics.Control: true}
	if w.caps != nil {
		specs = append(specs, stats.CapTopic(w.caps.changelog, parts))
		seen[w.caps.changelog] = true
	}
	outs := append([]string{w.cfg.topics.Output, w.cfg.topics.Rejected, w.cfg.topics.DeadLetter}, w.cfg.splitter.Topics()...)
	for _, t := range outs {
		if t != "" && !seen[t] {
			seen[t] = true
			specs = append(specs, stats.TopicSpec{Name: t, Partitions: parts})
		}
	}
	return stats.EnsureTopics(ctx, adm, specs...)
}

func (w *Worker) newSession() (session, error) {
	topics := append(append([]string(nil), w.cfg.topics.Input...), w.cfg.topics.Rewards...)
	opts := append(append(append(append(ClientTuning(), ProducerLimits()...), w.delayClientOpts()...), w.cfg.clientOpts...),
		kgo.ConsumerGroup(w.cfg.group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(w.onAssigned),
		kgo.OnPartitionsRevoked(w.onRevoked),
		kgo.OnPartitionsLost(w.onLost),
		kgo.RecordPartitioner(stats.Partitioner(nil, append(w.capTopics(), w.cfg.topics.Checkpoints)...)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if w.cfg.delivery == AtLeastOnce {
		cl, err := kgo.NewClient(append(opts, kgo.DisableAutoCommit())...)
		if err != nil {
			return nil, &ConfigError{Option: "ClientOpts", Reason: err.Error()}
		}
		return plainSession{cl: cl, log: w.log}, nil
	}
	s, err := kgo.NewGroupTransactSession(append(opts, kgo.TransactionalID(w.cfg.txnID))...)
	if err != nil {
		return nil, &ConfigError{Option: "ClientOpts", Reason: err.Error()}
	}
	return txnSession{s: s, unblockAfter: unblockAfter(s.Client())}, nil
}

// produce writes r in the current unit of work.
func (w *Worker) produce(r *kgo.Record) {
	w.sess.client().Produce(w.prodCtx, r, w.onProduced)
}

// produceOutput writes r, a record of outputRecord, in the current unit of
// work, and returns it to the pool once the client is done with it.
func (w *Worker) produceOutput(r *kgo.Record) {
	w.sess.client().Produce(w.prodCtx, r, w.onOutput)
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

// onAssigned starts a goroutine for every new partition. Their
// checkpoints are loaded in the background (one reader for the whole
// assignment): a partition processes nothing before its flow source is
// opened from its committed checkpoint, and the callback returns at once,
// so that a slow load (a crashed owner's transaction still open) cannot
// hold up the group.
func (w *Worker) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	sources := map[string]int32{}
	for t, ps := range assigned {
		for _, p := range ps {
			sources[stats.SourceName(t, p)] = p
		}
	}
	load := &checkpointLoad{done: make(chan struct{})}
	load.caps = w.startCapsLoad(cl, assigned)
	go w.loadCheckpoints(load, sources)
	var started []*partition
	for t, ps := range assigned {
		for _, id := range ps {
			p := w.newPartition(t, id, w.isReward(t), load)
			started = append(started, p)
			go p.run()
		}
	}
	w.mu.Lock()
	for _, p := range started {
		w.parts[topicPartition{p.topic, p.id}] = p
	}
	n := len(w.parts)
	w.mu.Unlock()
	w.updateShare(ctx, cl)
	w.m.assigned.Set(float64(n))
	w.joined.Store(true)
	w.log.Info().Int("new", len(started)).Int("owned", n).Msg("partitions assigned")
}

// loadCheckpoints reads the newest checkpoint of every source, retrying a
// few times. It fails rather than start a partition from zero, which
// would count its budget twice.
func (w *Worker) loadCheckpoints(load *checkpointLoad, sources map[string]int32) {
	defer close(load.done)
	if len(sources) == 0 {
		return
	}
	ctx := w.prodCtx
	for attempt := 1; ; attempt++ {
		load.cps, load.err = stats.LoadCheckpoints(ctx, w.cfg.clientOpts, w.cfg.topics.Checkpoints, sources)
		if load.err == nil || ctx.Err() != nil || attempt == 5 {
			break
		}
		w.log.Warn().Err(load.err).Int("attempt", attempt).Msg("load checkpoints")
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
		}
	}
	if load.err != nil {
		load.err = fmt.Errorf("load checkpoints: %w", load.err)
	}
}

// onRevoked stops the revoked partitions. With BlockRebalanceOnPoll they
// are idle and committed; were they not, the transaction session aborts
// the open transaction. At-least-once, their offsets are committed again
// (see commitRevoked).
func (w *Worker) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	w.revoke(ctx, cl, revoked, w.cfg.delivery == AtLeastOnce)
}

// revoke stops the partitions of revoked, committing their offsets first
// when commit is set.
func (w *Worker) revoke(ctx context.Context, cl *kgo.Client, revoked map[string][]int32, commit bool) {
	w.mu.Lock()
	var gone []*partition
	for t, ps := range revoked {
		for _, id := range ps {
			tp := topicPartition{t, id}
			if p := w.parts[tp]; p != nil {
				gone = append(gone, p)
				delete(w.parts, tp)
			}
		}
	}
	n := len(w.parts)
	w.mu.Unlock()
	w.stopPartitions(gone)
	if commit {
		w.commitRevoked(ctx, cl, gone)
	}
	w.resumeRevoked(cl, revoked)
	w.updateShare(ctx, cl)
	w.m.assigned.Set(float64(n))
	if len(gone) > 0 {
		w.log.Info().Int("revoked", len(gone)).Int("owned", n).Msg("partitions revoked")
	}
}

// updateShare tells the flow tree this worker's share of the cluster's
// traffic sources: the input partitions it owns over all partitions of
// the input topics (reward partitions do not count). flow uses it for its
// cold start and when the stats view is silent. With no input partition
// owned the share is left as it was (it weighs nothing then).
func (w *Worker) updateShare(ctx context.Context, cl *kgo.Client) {
	w.mu.Lock()
	owned := 0
	for _, p := range w.parts {
		if !p.reward {
			owned++
		}
	}
	w.mu.Unlock()
	if owned == 0 {
		return
	}
	if owned > w.inputPartitions && cl != nil {
		// Unknown yet, or partitions were added: ask the cluster.
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		td, err := kadm.NewClient(cl).ListTopics(mctx, w.cfg.topics.Input...)
		cancel()
		total := 0
		for _, t := range w.cfg.topics.Input {
			if d, ok := td[t]; ok && d.Err == nil {
				total += len(d.Partitions)
			}
		}
		if err != nil || total == 0 {
			w.log.Warn().Err(err).Msg("input partition count unknown; flow share unchanged")
			return
		}
		w.inputPartitions = total
	}
	f := min(float64(owned)/float64(w.inputPartitions), 1)
	w.setShare(f)
	w.log.Debug().Int("owned", owned).Int("of", w.inputPartitions).Float64("share", f).Msg("flow share")
}

func (w *Worker) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	w.log.Warn().Msg("partitions lost (session expired or fenced)")
	w.revoke(ctx, cl, lost, false)
}

func (w *Worker) stopPartitions(ps []*partition) {
	now := w.cfg.now()
	for _, p := range ps {
		close(p.quit)
		close(p.in)
		<-p.done
		p.counts.flush(w.m, p.tab.names)
		p.close(now)
		w.m.consumerLag.DeleteLabelValues(p.topic, fmt.Sprint(p.id))
	}
}

// closeAll stops the partitions the group did not revoke on close.
func (w *Worker) closeAll() {
	w.mu.Lock()
	var ps []*partition
	for tp, p := range w.parts {
		ps = append(ps, p)
		delete(w.parts, tp)
	}
	w.mu.Unlock()
	w.stopPartitions(ps)
	w.m.assigned.Set(0)
}

// tuner re-tunes the flow tree every tune interval and refreshes the
// gauges every sync interval.
func (w *Worker) tuner(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(w.cfg.tuneInterval)
	defer t.Stop()
	var lastGauges time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := w.cfg.now()
		w.tree.Tune(now)
		if now.Sub(lastGauges) >= w.cfg.syncInterval {
			lastGauges = now
			for _, c := range w.tree.Controllers() {
				w.m.snapshot(c.Snapshot())
			}
			w.m.viewAge.Set(w.view.Age().Seconds())
			if w.srm != nil {
				w.srm.check(w, now, w.variantTotals)
			}
		}
	}
}

// viewExchange gives flow the stats view as an Exchange; the worker
// publishes its reports itself, inside its transactions.
type viewExchange struct{ v *stats.View }

func (x viewExchange) Publish([]flow.Report) error { return nil }
func (x viewExchange) View(budget string, dst []flow.Report) []flow.Report {
	return x.v.View(budget, dst)
}
