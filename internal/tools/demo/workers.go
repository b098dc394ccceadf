package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/memdir"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startBroker starts the embedded broker on a data dir (a temporary one,
// in memory where there is room (memdir.MkdirTemp), removed by stop,
// unless c.DataDir is set) and an admin client of it;
// stop closes them, also after an error.
func startBroker(ctx context.Context, c Config) (brokers []string, adm *kadm.Client, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	dir := c.DataDir
	if dir == "" {
		d, err := memdir.MkdirTemp("throttler-demo-")
		if err != nil {
			return nil, nil, stop, err
		}
		stops = append(stops, func() { memdir.RemoveAll(d) })
		dir = d
	}
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.DataDir(dir), broker.Partitions(c.Partitions),
		broker.SeedTopics(topicEvents, topicClicks, topicPassed, topicControl, topicTreatment, topicDead),
		broker.Logger(c.Log.With().Str("component", "broker").Logger()))
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, func() { b.Close() })
	brokers = b.Addrs()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, nil, stop, err
	}
	stops = append(stops, admCl.Close)
	return brokers, kadm.NewClient(admCl), stop, nil
}

// startWorkers starts the demo's workers of cfg; stop stops them (once:
// later calls return nothing) and returns their errors.
func startWorkers(ctx context.Context, c Config, cfg *config.Config) (ws []*worker, trees []*flow.Tree, stop func() []error, err error) {
	workCtx, stopWorkers := context.WithCancel(ctx)
	ws = make([]*worker, c.Workers)
	trees = make([]*flow.Tree, c.Workers)
	for i := range ws {
		w, tree, err := app.NewWorker(cfg,
			consumer.WithLogger(c.Log.With().Int("worker", i+1).Logger()),
			// Frequent heartbeats make the group settle fast; the session
			// and rebalance timeouts stay at kgo's defaults (45s, 60s), so
			// that a machine too busy to run the workers for a few seconds
			// does not expire their sessions (no member dies in a demo).
			consumer.ClientOpts(kgo.HeartbeatInterval(500*time.Millisecond)))
		if err != nil {
			stopWorkers()
			return nil, nil, nil, err
		}
		// Until peers' reports arrive, each worker counts itself as an
		// equal share of the cluster.
		tree.SetShare(1 / float64(c.Workers))
		ws[i] = &worker{w: w, tree: tree, done: make(chan error, 1)}
		trees[i] = tree
		go func(x *worker) { x.done <- x.w.Run(workCtx) }(ws[i])
	}
	var once sync.Once
	stop = func() (errs []error) {
		once.Do(func() {
			stopWorkers()
			for i, x := range ws {
				select {
				case err := <-x.done:
					if err != nil {
						errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
					}
				case <-time.After(settleTimeout):
					errs = append(errs, fmt.Errorf("worker %d did not stop within %v", i+1, settleTimeout))
				}
			}
		})
		return errs
	}
	return ws, trees, stop, nil
}

// load is the demo's load generator, running.
type load struct {
	prod *kgo.Client
	stop func() // stops it and waits; once
	wg   sync.WaitGroup
	sum  loadgen.Summary
	err  error
}

// startLoad starts producing the demo's events at c.Rate.
func startLoad(ctx context.Context, c Config, brokers []string, enc loadgen.Encoder) (*load, error) {
	gen, err := loadgen.New(loadgen.Config{Seed: 1, Users: c.Users, Budgets: loadBudgets()})
	if err != nil {
		return nil, err
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	loadCtx, stop := context.WithCancel(ctx)
	l := &load{prod: prod}
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			stop()
			l.wg.Wait()
			prod.Close()
		})
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.sum, l.err = loadgen.Run(loadCtx, prod, gen, loadgen.RunConfig{Topic: topicEvents, Rate: c.Rate, Encoder: enc})
	}()
	return l, nil
}

// finish stops the load and returns how many events it produced, noting
// its error in res.
func (l *load) finish(res *Result) uint64 {
	l.stop()
	if l.err != nil {
		res.Warnings = append(res.Warnings, "load generator: "+l.err.Error())
	}
	return l.sum.Produced
}

// waitReady waits until the workers consume, and notes in r how long it
// took from start and whether the budgets had begun by then.
func (r *Result) waitReady(ctx context.Context, adm *kadm.Client, ws []*worker, c Config, start time.Time) error {
	if err := waitReady(ctx, adm, ws, c.Partitions, max(int64(c.Rate/2), 100)); err != nil {
		return err
	}
	r.ReadyAfter = time.Since(start)
	if time.Now().After(r.Begin) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the workers were ready %.1fs after the budgets began: they lost that time", time.Since(r.Begin).Seconds()))
	}
	return nil
}

// startClicks starts the reward simulator; done is closed when it ends.
func startClicks(ctx context.Context, c Config, brokers []string, end time.Time, enc loadgen.Encoder) (clk *clicker, done <-chan struct{}, err error) {
	clk, err = newClicker(brokers, c.RewardShare, c.RewardDelay, end, enc)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{})
	go func() { defer close(ch); clk.run(ctx) }()
	return clk, ch, nil
}

// settle waits until the workers have consumed and committed everything
// and the stats view shows their last counters, noting in r what went
// wrong on the way (the reward simulator's error too).
func (r *Result) settle(ctx context.Context, clk *clicker, adm *kadm.Client, wt *watcher) {
	if err := clk.Err(); err != nil {
		r.Warnings = append(r.Warnings, "reward simulator: "+err.Error())
	}
	if err := waitDrained(ctx, adm); err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	}
	if err := wt.waitSettled(ctx, adm); err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	}
}
