// Package demo runs throttler end to end in one process, with nothing to
// set up: an embedded broker on a temporary data dir, a load generator,
// several workers of one consumer group, a reward simulator, budgets of
// every kind and an experiment; it prints live progress and ends with what
// the output topics really hold. `throttler demo` is its command.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// Defaults of Config.
const (
	DefaultDuration      = 60 * time.Second
	DefaultRate          = 2000
	DefaultWorkers       = 3
	DefaultPartitions    = 12
	DefaultStartDelay    = 8 * time.Second
	DefaultRewardShare   = 0.20
	DefaultRewardDelay   = time.Second
	DefaultSyncInterval  = time.Second
	DefaultProgressEvery = 2 * time.Second
	DefaultUsers         = 10000
)

// settleTimeout bounds each wait of the end: the workers catching up, the
// stats view showing their last counters, the workers stopping, the topics
// being read.
const settleTimeout = 60 * time.Second

// Config describes a demo run. The zero value runs the defaults.
type Config struct {
	// Duration is the length of the budgets' window. Default 60s.
	Duration time.Duration
	// Rate is the load in events per second. Default 2000.
	Rate float64
	// Workers is the number of workers in the group. Default 3.
	Workers int
	// Partitions is the partition count of the input topic. Default 12.
	Partitions int32
	// StartDelay is the time from the start of the run to the beginning of
	// the budgets' window, in which the workers join their group. Default
	// 8s.
	StartDelay time.Duration
	// RewardShare is the share of passed events that get a click. Default
	// 0.2.
	RewardShare float64
	// RewardDelay is the time from reading a pass to its click. Default 1s.
	RewardDelay time.Duration
	// SyncInterval is the workers' sync interval. Default 1s.
	SyncInterval time.Duration
	// Users is the number of distinct users (Zipf, skew 1.1). Default 10000.
	Users int
	// Progress receives the live progress table every ProgressEvery; nil
	// for none. Redraw moves the cursor up over the previous table (for
	// terminals; it writes escape codes).
	Progress      io.Writer
	ProgressEvery time.Duration
	Redraw        bool
	// Dashboard is the address the web dashboard listens on while the
	// demo runs ("127.0.0.1:0" picks a free port); "" for none. Its URL
	// is printed on Progress and set in Result.Dashboard.
	Dashboard string
	// Log receives the broker's and workers' logs. Default none.
	Log zerolog.Logger
	// DataDir is the broker's data dir. Default: a temporary directory,
	// in memory where there is room (memdir.MkdirTemp), removed at the
	// end.
	DataDir string
	// Format of the events: json, avro or protobuf (through a schema
	// registry run in the process). Default json.
	Format string
}

func (c *Config) defaults() error {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.Duration, DefaultDuration)
	set(&c.StartDelay, DefaultStartDelay)
	set(&c.RewardDelay, DefaultRewardDelay)
	set(&c.SyncInterval, DefaultSyncInterval)
	set(&c.ProgressEvery, DefaultProgressEvery)
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.RewardShare == 0 {
		c.RewardShare = DefaultRewardShare
	}
	if c.Users == 0 {
		c.Users = DefaultUsers
	}
	switch {
	case c.Duration < time.Second:
		return fmt.Errorf("demo: duration must be at least 1s, got %v", c.Duration)
	case !(c.Rate > 0):
		return fmt.Errorf("demo: rate must be positive, got %v", c.Rate)
	case c.Workers < 1 || int32(c.Workers) > c.Partitions:
		return fmt.Errorf("demo: workers must be between 1 and the partitions (%d), got %d", c.Partitions, c.Workers)
	case !(c.RewardShare > 0 && c.RewardShare <= 1):
		return fmt.Errorf("demo: reward share must be in (0, 1], got %v", c.RewardShare)
	case c.StartDelay < 0 || c.RewardDelay < 0 || c.SyncInterval < config.MinSyncInterval:
		return errors.New("demo: negative delay or sync interval below 10ms")
	case c.Format != "" && !slices.Contains(config.FormatNames, c.Format):
		return fmt.Errorf("demo: format must be json, avro or protobuf, got %q", c.Format)
	}
	return nil
}

// worker is one running worker.
type worker struct {
	w    *consumer.Worker
	tree *flow.Tree
	done chan error
}

// Run runs the demo until its window has ended and its outputs are
// counted, or ctx ends (an error). The broker and its data are gone when
// it returns.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	brokers, adm, stopBroker, err := startBroker(ctx, c)
	defer stopBroker()
	if err != nil {
		return nil, err
	}

	begin := start.Add(c.StartDelay).Truncate(time.Second).Add(time.Second)
	end := begin.Add(c.Duration)
	fm, cfg, err := formatConfig(ctx, c, brokers, begin, end)
	defer fm.stop()
	if err != nil {
		return nil, err
	}

	ws, trees, stopAll, err := startWorkers(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	defer stopAll()
	// Load, from now on: events before the window are rejected as not
	// started, and the workers are busy by the time it begins.
	load, err := startLoad(ctx, c, brokers, fm.enc)
	if err != nil {
		return nil, errors.Join(err, errors.Join(stopAll()...))
	}
	defer load.stop()

	res := &Result{Begin: begin, End: end, Rate: c.Rate, Workers: c.Workers}
	if err := res.waitReady(ctx, adm, ws, c, start); err != nil {
		return nil, errors.Join(err, errors.Join(stopAll()...))
	}

	wt, closeView, err := res.watch(ctx, c, brokers, trees, cfg.Budgets)
	if err != nil {
		return nil, errors.Join(err, errors.Join(stopAll()...))
	}
	defer closeView()

	clk, clickDone, err := startClicks(ctx, c, brokers, end, fm.enc)
	if err != nil {
		return nil, errors.Join(err, errors.Join(stopAll()...))
	}

	// The window: sample every second, print every ProgressEvery.
	if err := wt.follow(ctx, c, ws, produced(adm)); err != nil {
		return nil, errors.Join(err, errors.Join(stopAll()...))
	}

	// The end: stop the load, let the clicks due in the window out, wait
	// until the workers have consumed and committed everything and the
	// stats view shows their last counters.
	res.Produced = load.finish(res)
	select {
	case <-clickDone:
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), errors.Join(stopAll()...))
	}
	res.settle(ctx, clk, adm, wt)
	wt.final(res, cfg.Budgets)
	if errs := stopAll(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	cctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	cnt, err := countTopics(cctx, brokers, adm, fm.enc)
	if err != nil {
		return nil, err
	}
	res.fill(cfg, cnt, wt.samples)
	return res, nil
}

// watch opens the stats view and the dashboard on it, and returns the
// watcher of the window with the function that closes both.
func (res *Result) watch(ctx context.Context, c Config, brokers []string, trees []*flow.Tree, budgets []config.Budget) (*watcher, func(), error) {
	view, err := stats.NewView(ctx, topicStats, []kgo.Opt{kgo.SeedBrokers(brokers...)})
	if err != nil {
		return nil, nil, err
	}
	var stopDash func()
	if res.Dashboard, stopDash, err = startDashboard(c, view); err != nil {
		view.Close()
		return nil, nil, err
	}
	wt := &watcher{view: view, trees: trees, budgets: budgets, begin: res.Begin, end: res.End,
		samples: map[string][]Sample{}, redraw: c.Redraw}
	return wt, func() { stopDash(); view.Close() }, nil
}

// follow samples the view every second and prints the progress table every
// ProgressEvery until the window ends; a worker that stops is an error.
func (w *watcher) follow(ctx context.Context, c Config, ws []*worker, produced func() int64) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPrint time.Time
	for {
		now := time.Now()
		if !now.Before(w.begin) {
			w.sample()
		}
		if c.Progress != nil && now.Sub(lastPrint) >= c.ProgressEvery-100*time.Millisecond {
			lastPrint = now
			w.progress(c.Progress, now, produced())
		}
		if now.After(w.end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		for i, x := range ws {
			select {
			case err := <-x.done:
				return fmt.Errorf("worker %d stopped: %v", i+1, err)
			default:
			}
		}
	}
}

// produced returns a function that counts the records in the input topic
// (-1 when it cannot tell).
func produced(adm *kadm.Client) func() int64 {
	return func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topicEvents)
		if err != nil {
			return -1
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
}

// waitReady waits until every worker is ready, the group is stable with
// every input and reward partition assigned, and the group's lag on the
// input topic is at most maxLag: the workers are keeping up. (A partition
// that changed owner may wait seconds for its committed offset: kfake
// answers a fetch of committed offsets that requires stable offsets with
// UNSTABLE_OFFSET_COMMIT while any transaction of the group is pending.)
func waitReady(ctx context.Context, adm *kadm.Client, ws []*worker, partitions int32, maxLag int64) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		ready := true
		for i, x := range ws {
			select {
			case err := <-x.done:
				return fmt.Errorf("worker %d stopped while starting: %v", i+1, err)
			default:
			}
			if x.w.Ready() != nil {
				ready = false
			}
		}
		if ready {
			gs, err := adm.DescribeGroups(ctx, group)
			if err == nil {
				g := gs[group]
				assigned := 0
				for _, ps := range g.AssignedPartitions() {
					assigned += len(ps)
				}
				if g.State == "Stable" && len(g.Members) == len(ws) && assigned == 2*int(partitions) &&
					lag(ctx, adm, topicEvents) <= maxLag {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workers not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitDrained waits until the group has committed the end of the input
// and reward topics.
func waitDrained(ctx context.Context, adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for lag(ctx, adm, topicEvents, topicClicks) > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the workers did not consume everything within %v", settleTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// lag returns how many records of topics the group has not committed yet
// (MaxInt64 when it cannot tell).
func lag(ctx context.Context, adm *kadm.Client, topics ...string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return math.MaxInt64
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
	if err != nil {
		return math.MaxInt64
	}
	var behind int64
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(o.Topic, o.Partition)
		switch {
		case o.Err != nil || (ok && c.Err != nil):
			behind = math.MaxInt64
		case behind == math.MaxInt64:
		case !ok || c.At < 0:
			behind += o.Offset
		case c.At < o.Offset:
			behind += o.Offset - c.At
		}
	})
	return behind
}

// waitSettled waits until the stats view holds, for every input and reward
// partition the group committed, the ledger its owner wrote with that
// offset: the view's counters are then the workers' final ones. (The
// workers' trees cannot tell: a lane idle for a few sync intervals is
// released, and its counters live on in the ledger only.)
func (w *watcher) waitSettled(ctx context.Context, adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for !w.ledgersAtCommits(ctx, adm) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the stats view did not reach the workers' last ledgers within %v", settleTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// ledgersAtCommits reports whether the view's ledger of every committed
// partition is at its committed offset or beyond.
func (w *watcher) ledgersAtCommits(ctx context.Context, adm *kadm.Client) bool {
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topicEvents, topicClicks)
	if err != nil {
		return false
	}
	at := true
	committed.Each(func(o kadm.OffsetResponse) {
		switch {
		case o.Err != nil:
			at = false
		case o.At <= 0: // nothing committed: nothing counted
		default:
			info, ok := w.view.Source(stats.SourceName(o.Topic, o.Partition))
			at = at && ok && info.Offset >= o.At
		}
	})
	return at
}
