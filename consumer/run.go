package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/clip"
	"github.com/throttler/throttler/internal/kafkacheck"
	"github.com/throttler/throttler/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// outQueue is how many chunks of outputs may wait for the producer
// goroutine.
const outQueue = 64

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
	w.status.started = w.cfg.now()
	defer w.prodCancel()
	w.outQ = make(chan []*kgo.Record, outQueue)
	go w.producer()
	defer close(w.outQ) // after every partition stopped (closeAll)

	defer w.serveHTTP()()

	// Rejected credentials or a TLS mismatch would otherwise show up as
	// clients retrying EOFs forever.
	if err := kafkacheck.Check(ctx, w.cfg.clientOpts, connCheckTimeout); kafkacheck.Fatal(err) {
		return stoppedOr(ctx, err)
	}
	if err := w.ensureTopics(ctx); err != nil {
		return stoppedOr(ctx, err)
	}
	// Watched from before the view's first read: a transaction Kafka left
	// open on the stats topic would hold that read.
	if w.cfg.delivery == ExactlyOnce {
		hangCtx, stopHangs := context.WithCancel(ctx)
		hangsDone := make(chan struct{})
		go w.watchHangs(hangCtx, hangsDone)
		defer func() { stopHangs(); <-hangsDone }()
	}
	stopAll, err := w.startView(ctx)
	defer stopAll()
	if err != nil {
		return stoppedOr(ctx, err)
	}
	// Controllers created when partitions open their lanes read their
	// peers from the view at once.
	w.tree.SetExchange(viewExchange{w.view})
	w.tree.Sync(w.cfg.now(), viewExchange{w.view})

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
	if w.cfg.delivery == ExactlyOnce {
		w.settleOwnHangs(ctx)
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
	if cerr := w.drainCommitter(); cerr != nil && err == nil {
		err = cerr
	}
	w.sess.close()
	w.closeAll()
	w.log.Info().Err(err).Msg("worker stopped")
	return err
}

// stoppedOr is what Run returns for err, met while starting: nil when ctx
// ended meanwhile (a stop during the start is a clean stop, whatever the
// step it interrupted reports), err otherwise.
func stoppedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// serveHTTP serves the metrics and health endpoints, if any, in the
// background; the function it returns shuts the server down.
func (w *Worker) serveHTTP() (shutdown func()) {
	if w.http == nil {
		return func() {}
	}
	go func() {
		if err := w.http.Serve(); err != nil {
			w.log.Error().Err(err).Msg("http server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.http.Shutdown(sctx)
	}
}

// startView opens the stats view, waits for it to catch up, then starts
// what runs beside the worker (OnStart). stop closes what was started,
// also after an error.
func (w *Worker) startView(ctx context.Context) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	// The view's fetches wait for a quarter of the worker's FetchMinBytes,
	// or half a sync interval (viewFetchMaxWait). It keeps digests of the
	// budgets' definitions, not the definitions: the worker only asks
	// whether its own are published.
	viewTuning := []kgo.Opt{kgo.FetchMinBytes(FetchMinBytes / 4), kgo.FetchMaxWait(viewFetchMaxWait(w.cfg.syncInterval))}
	waiting := stats.Waiting(func(err error) {
		w.log.Warn().Str("error", clip.Error(err)).Msg("stats topic: waiting for its partitions' leaders to answer")
	})
	view, err := stats.NewView(ctx, w.cfg.topics.Stats, slices.Concat(w.cfg.clientOpts, viewTuning, w.cfg.statsClientOpts), stats.DigestDefinitions(), waiting)
	if err != nil {
		return stop, fmt.Errorf("stats view: %w", err)
	}
	w.view = view
	w.viewPtr.Store(view)
	stops = append(stops, view.Close)
	if err := view.WaitCaughtUp(ctx); err != nil {
		return stop, fmt.Errorf("stats view: %w", err)
	}
	// The definitions the view lacks, at the first commits (then those
	// that change): once, not every sync interval.
	w.defs.start(w.tree, w.cfg.txnID)
	for _, start := range w.cfg.onStart {
		stopIt, err := start(ctx, w)
		if err != nil {
			return stop, err
		}
		stops = append(stops, stopIt)
	}
	return stop, nil
}

// fail records a fatal error and stops the loop.
func (w *Worker) fail(err error) {
	w.fatal.CompareAndSwap(nil, &err)
	if w.stop != nil {
		w.stop()
	}
}

// ensureTopics checks that the consumed topics exist and creates, when
// missing, the topics the worker writes to: the stats topic (as many
// partitions as the largest consumed topic; an existing one with fewer is
// an error), the control topic, the caps' changelogs and the output,
// rejected, dead-letter and variant topics.
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
	specs := []stats.TopicSpec{stats.StatsTopic(w.cfg.topics.Stats, parts)}
	if t := w.cfg.topics.Control; t != "" {
		specs = append(specs, stats.TopicSpec{Name: t, Partitions: 1, Compact: true}) // as control.Topic
	}
	// The topics the worker writes to: created with the input's partition
	// count when missing (brokers need not auto-create topics).
	changelogs := map[string]bool{}
	for _, t := range w.pipeline.Changelogs() {
		changelogs[t] = true
	}
	for _, t := range w.writtenTopics() {
		switch {
		case t == w.cfg.topics.Stats:
		case changelogs[t]:
			specs = append(specs, stats.CapTopic(t, parts))
		default:
			specs = append(specs, stats.TopicSpec{Name: t, Partitions: parts})
		}
	}
	return stats.EnsureTopics(ctx, adm, specs...)
}

// writtenTopics returns the topics the worker writes to, each once: the
// stats topic, the caps' changelogs, and the output, rejected,
// dead-letter and variant topics.
func (w *Worker) writtenTopics() []string {
	seen := map[string]bool{w.cfg.topics.Control: true}
	var out []string
	all := append(append([]string{w.cfg.topics.Stats}, w.pipeline.Changelogs()...),
		w.cfg.topics.Output, w.cfg.topics.Rejected, w.cfg.topics.DeadLetter)
	for _, t := range append(all, w.cfg.splitter.Topics()...) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func (w *Worker) newSession() (session, error) {
	topics := append(append([]string(nil), w.cfg.topics.Input...), w.cfg.topics.Rewards...)
	tuning := append(ClientTuning(), kgo.FetchMaxWait(fetchMaxWait(w.cfg.commitInterval)))
	if w.cfg.delivery == ExactlyOnce {
		// The outputs of a transaction are seen by read_committed readers
		// only when it commits, and the commit flushes whatever lingers
		// (kgo also stops lingering when its buffer fills): batches that
		// wait for the commit cost no latency, and a lightly loaded
		// worker sends one produce request per commit instead of one
		// every few records.
		tuning = append(tuning, kgo.ProducerLinger(w.cfg.commitInterval))
	}
	opts := append(append(append(append(tuning, ProducerLimits()...), w.delayClientOpts()...), w.cfg.clientOpts...),
		kgo.ConsumerGroup(w.cfg.group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(w.onAssigned),
		kgo.OnPartitionsRevoked(w.onRevoked),
		kgo.OnPartitionsLost(w.onLost),
		kgo.RecordPartitioner(stats.LedgerPartitioner(nil, w.cfg.topics.Stats, w.pipeline.Changelogs()...)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if w.cfg.delivery == AtLeastOnce {
		cl, err := kgo.NewClient(append(opts, kgo.DisableAutoCommit())...)
		if err != nil {
			return nil, &ConfigError{Option: "ClientOpts", Reason: err.Error()}
		}
		return newPlainSession(cl, w.log), nil
	}
	s, err := kgo.NewGroupTransactSession(append(opts, kgo.TransactionalID(w.cfg.txnID))...)
	if err != nil {
		return nil, &ConfigError{Option: "ClientOpts", Reason: err.Error()}
	}
	return txnSession{s: s, unblockAfter: unblockAfter(s.Client())}, nil
}

// tuner re-tunes the flow tree every tune interval, syncs it when a
// commit asks (requestSync) and, every sync interval, refreshes the
// gauges of the active controllers and deletes the series of budgets no
// longer active here (metrics.sweep).
func (w *Worker) tuner(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(DefaultTuneInterval)
	defer t.Stop()
	var lastGauges time.Time
	var skipped uint64
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-w.syncReq:
			w.tree.Sync(at, viewExchange{w.view})
			continue
		case <-t.C:
		}
		now := w.cfg.now()
		w.tree.Tune(now)
		if now.Sub(lastGauges) >= w.cfg.syncInterval {
			lastGauges = now
			w.m.beginGauges()
			for _, c := range w.tree.Controllers() {
				w.m.snapshot(c)
			}
			w.m.endGauges()
			w.m.sweep(now, w.cfg.seriesIdle)
			w.m.viewAge.Set(w.view.Age().Seconds())
			skipped = w.viewSkipped(skipped)
			if w.srm != nil {
				w.srm.check(w, now, w.variantTotals)
			}
		}
	}
}

// viewSkipped publishes how many stats records the view skipped and, when
// that grew since before, logs it once with the newest error (a bounded
// line); it returns the count.
func (w *Worker) viewSkipped(before uint64) uint64 {
	st := w.view.Stats()
	w.m.viewSkipped.Set(float64(st.Skipped))
	if st.Skipped > before {
		w.log.Warn().Uint64("skipped", st.Skipped-before).Str("last_error", clip.Error(st.LastError)).
			Msg("stats records skipped: they do not decode, or break the limits (counted in throttler_stats_records_skipped)")
	}
	return st.Skipped
}

// viewExchange gives flow the stats view as an Exchange; the worker
// publishes its reports itself, inside its transactions.
type viewExchange struct{ v *stats.View }

func (x viewExchange) Publish([]flow.Report) error { return nil }
func (x viewExchange) View(budget string, dst []flow.Report) []flow.Report {
	return x.v.View(budget, dst)
}
func (x viewExchange) Report(budget, source string) (flow.Report, bool) {
	return x.v.Report(budget, source)
}
