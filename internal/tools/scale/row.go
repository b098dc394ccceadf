package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/tools/churn"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// run is one row being measured.
type run struct {
	c          *Config
	b          int
	dir        string
	log        zerolog.Logger
	broker     *proc
	brokerCPU  float64 // at the end of the load
	brokerLast float64 // at the last sample
	endTaken   bool    // the load's end snapshot was taken
	ctx        context.Context
	scrapes    sync.WaitGroup // scrapers and snapshots
	addr       string
	opts       []kgo.Opt
	workers    []*worker
	start      time.Time             // the workers were started
	bounds     [phases + 1]time.Time // steady, churn from, churn to, load end
	tail       *tail
	churned    churn.Summary
	row        Row
}

func (r *run) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.row.Notes = append(r.row.Notes, msg)
	r.log.Warn().Int("budgets", r.b).Msg(msg)
}

// runRow measures a row of b budgets.
func runRow(ctx context.Context, c *Config, b int) (Row, error) {
	r := &run{c: c, b: b, dir: rowDir(c.Dir, b), log: c.Log, row: Row{Budgets: b, Notes: []string{}}, ctx: ctx}
	t0 := time.Now()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return r.row, err
	}
	if err := r.startBroker(ctx); err != nil {
		return r.row, err
	}
	defer r.broker.stop(10 * time.Second)
	defer func() {
		for _, w := range r.workers {
			w.kill()
		}
	}()
	begin := time.Now()
	if err := r.prepare(ctx, begin); err != nil {
		return r.row, err
	}
	if err := r.measure(ctx); err != nil {
		return r.row, err
	}
	r.row.Seconds = time.Since(t0).Seconds()
	return r.row, nil
}

// startBroker starts `throttler broker` on a free loopback port with a
// data directory, compacting nothing during the run (so that the topics
// hold, at the end, everything written), and the input topic.
func (r *run) startBroker(ctx context.Context) error {
	p, err := startProc(r.dir, "broker", r.c.Binary, "broker", "--addr", "127.0.0.1:0",
		"--data-dir", filepath.Join(r.dir, "broker-data"), "--partitions", strconv.Itoa(int(r.c.Partitions)),
		"--seed-topics", inputTopic, "--log-level", "info")
	if err != nil {
		return err
	}
	r.broker = p
	line, err := p.waitLine(ctx, p.out, ":", 60*time.Second)
	if err != nil {
		p.kill()
		return err
	}
	r.addr = strings.TrimSpace(line)
	r.opts = []kgo.Opt{kgo.SeedBrokers(r.addr)}
	return nil
}

// prepare writes the workers' config and the light budgets, which go to
// a budgets_file or, with ViaControl, through `throttler budget import`.
func (r *run) prepare(ctx context.Context, begin time.Time) error {
	budgets := filepath.Join(r.dir, "light.jsonl")
	if err := r.c.writeBudgetsFile(budgets, r.b); err != nil {
		return err
	}
	file := "light.jsonl"
	if r.c.ViaControl {
		file = ""
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, r.c.Binary, "budget", "import", "--brokers", r.addr, "--group", group, "--timeout", "5m", budgets)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("budget import: %w: %s", err, out)
		}
		s := time.Since(t0).Seconds()
		r.row.ImportSeconds = &s
	}
	return r.c.writeConfig(filepath.Join(r.dir, "config.yaml"), r.addr, file, begin)
}

// startWorkers starts the worker processes.
func (r *run) startWorkers() error {
	for i := range r.c.Workers {
		name := "worker-" + strconv.Itoa(i+1)
		args := []string{"run", "--config", "config.yaml", "--http", "127.0.0.1:0", "--transactional-id", "scale-" + name}
		if r.c.ProfileDir != "" {
			args = append(args, "--cpuprofile", filepath.Join(r.c.ProfileDir, fmt.Sprintf("budgets-%d-%s.prof", r.b, name)))
		}
		p, err := startProc(r.dir, name, r.c.Binary, args...)
		if err != nil {
			return err
		}
		r.workers = append(r.workers, &worker{proc: p, i: i})
	}
	return nil
}

// measure runs the workers, the load, the changes and the watchers, then
// stops the workers and takes the figures.
func (r *run) measure(ctx context.Context) error {
	if err := r.startWorkers(); err != nil {
		return err
	}
	r.start = time.Now()
	d := r.c.Duration
	r.bounds = [phases + 1]time.Time{r.start.Add(d / 3), r.start.Add(d), r.start.Add(d), r.start.Add(d)}
	if r.c.ChurnRate > 0 {
		r.bounds[1], r.bounds[2] = r.start.Add(d/3), r.start.Add(2*d/3)
	}
	var err error
	if r.tail, err = newTail(r.opts, r.c.Paced, r.bounds); err != nil {
		return err
	}
	tailCtx, stopTail := context.WithCancel(ctx)
	defer stopTail()
	go r.tail.run(tailCtx)
	monCtx, stopMonitor := context.WithCancel(ctx)
	monDone := make(chan struct{})
	go func() { defer close(monDone); r.monitor(monCtx) }()
	loadErr := make(chan error, 1)
	go func() { loadErr <- r.load(ctx) }()
	churnErr := make(chan error, 1)
	go func() { churnErr <- r.churn(ctx) }()
	if err := <-loadErr; err != nil {
		stopMonitor()
		return fmt.Errorf("load: %w", err)
	}
	if err := <-churnErr; err != nil {
		r.note("budget changes: %v", err)
	}
	r.drain(ctx)
	stopMonitor()
	<-monDone
	if !r.endTaken {
		r.loadEnd()
	}
	r.scrapes.Wait()
	return r.finish(ctx, stopTail)
}

// load produces the events at the rate for the duration.
func (r *run) load(ctx context.Context) error {
	g, err := loadgen.New(r.c.generator(r.b))
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(r.opts, kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	sum, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{Topic: inputTopic, Rate: r.c.Rate, Duration: r.c.Duration})
	r.log.Info().Int("budgets", r.b).Uint64("produced", sum.Produced).Msg("load done")
	return err
}

// churn changes budgets at the churn rate during the middle third.
func (r *run) churn(ctx context.Context) error {
	if r.c.ChurnRate == 0 {
		return nil
	}
	f, err := os.Open(filepath.Join(r.dir, "light.jsonl"))
	if err != nil {
		return err
	}
	light, _, ps := config.ReadBudgets(f, "light.jsonl")
	f.Close()
	if len(ps) > 0 {
		return ps
	}
	p, err := churn.NewPlanner(churn.Config{Topic: controlTopic, Rate: r.c.ChurnRate, Duration: r.bounds[2].Sub(r.bounds[1]), Change: light, Seed: 1})
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(r.opts, kgo.ProducerLinger(time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(r.bounds[1])):
	}
	r.churned, err = churn.Run(ctx, cl, p)
	return err
}

// drain waits, once the load ended, for the group to commit every input
// record, at most Config.Drain; a row that delivered nothing waits no
// longer than its first-delivery bound.
func (r *run) drain(ctx context.Context) {
	cl, err := kgo.NewClient(r.opts...)
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(r.c.Drain)
	for {
		behind, err := lag(ctx, adm)
		if err == nil && behind == 0 {
			return
		}
		nothing := r.tail.firstDelivery().IsZero() && time.Since(r.start) > r.c.FirstDelivery
		if time.Now().After(deadline) || nothing || ctx.Err() != nil {
			if nothing {
				r.note("nothing delivered within %v of the workers' start", r.c.FirstDelivery)
			} else {
				r.note("not drained: %d input records uncommitted %v after the load (%v)", behind, r.c.Drain, err)
			}
			return
		}
		time.Sleep(500 * time.Millisecond) // polling the group's offsets
	}
}

// lag returns the input records the group has not committed.
func lag(ctx context.Context, adm *kadm.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, inputTopic)
	if err != nil {
		return 0, err
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var behind int64
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := offs.Lookup(inputTopic, o.Partition)
		behind += o.Offset - max(c.At, 0)
	})
	return behind, nil
}
