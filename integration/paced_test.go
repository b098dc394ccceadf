package integration

import (
	"context"
	"fmt"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// outputCounter follows a topic (read_committed) from the start and keeps
// how many records of a budget it has seen, and when.
type outputCounter struct {
	mu      sync.Mutex
	n       int
	samples []sample
}

type sample struct {
	at time.Time
	n  int
}

func followOutput(ctx context.Context, t *testing.T, brokers, topic, budget string) *outputCounter {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	c := &outputCounter{}
	go func() {
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == "throttler-budget" && string(h.Value) == budget {
						n++
					}
				}
			})
			c.mu.Lock()
			c.n += n
			c.samples = append(c.samples, sample{time.Now(), c.n})
			c.mu.Unlock()
		}
	}()
	return c
}

// at returns the count seen by instant t.
func (c *outputCounter) at(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.samples {
		if s.at.After(t) {
			break
		}
		n = s.n
	}
	return n
}

func (c *outputCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Three `throttler run` processes on a 12-partition topic with skewed
// (zipf) traffic pace one budget over a 60 s window; one worker is stopped
// with SIGTERM mid-window. Delivered passes must end within 1% of the
// target, follow the ideal curve within 3% of the target, and equal the
// passes counted in the ledgers and the stats topic. It runs on kfake and
// on Apache Kafka.
func TestPacedWindowThreeWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s run across processes")
	}
	onBrokers(t, bothBrokers, runPacedWindow)
}

func runPacedWindow(t *testing.T, k brokerKind) {
	const (
		target = 30000
		window = 60 * time.Second
		rate   = 2000
	)
	brk := sharedCluster(t, k, 12)
	addr, input, passed, group := brk.addr, brk.name("events"), brk.name("passed"), brk.name("paced")
	begin := time.Now().Add(20 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg := writeFile(t, "worker.yaml", fmt.Sprintf(`brokers: [%s]
group: %s
topics:
  input: [%s]
  output: %s
  partitions: 12
sync_interval: 1s
commit_interval: 100ms
%sfields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - name: campaign
    target: %d
    begin: %s
    end: %s
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, addr, group, input, passed, k.groupYAML(groupTimeouts{}), target, begin.Format(time.RFC3339), end.Format(time.RFC3339)))

	// the input topic first, so that the workers find it
	gen := start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", "12",
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(8*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign", "--users", "2000", "--skew", "1.2", "--seed", "7")
	waitProducing(t, gen, addr, input)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := followOutput(ctx, t, addr, passed, "campaign")

	var workers []*proc
	for i := 0; i < 3; i++ {
		workers = append(workers, start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg))
	}
	time.Sleep(time.Until(begin.Add(window / 2))) // real time: half of the paced window
	if err := workers[2].stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("worker-2 after SIGTERM: %v", err)
	}
	t.Logf("worker-2 stopped at %.1fs into the window", time.Since(begin).Seconds())
	time.Sleep(time.Until(end.Add(5 * time.Second))) // real time: the rest of the window

	// the curve: sampled every second over the window
	maxDev, worstAt := 0.0, 0.0
	for s := begin; !s.After(end); s = s.Add(time.Second) {
		ideal := target * s.Sub(begin).Seconds() / window.Seconds()
		if s.Sub(begin) <= 5*time.Second || s.Sub(begin)%(10*time.Second) == 0 {
			t.Logf("t=%2.0fs delivered %5d ideal %5.0f", s.Sub(begin).Seconds(), out.at(s), ideal)
		}
		if d := math.Abs(float64(out.at(s))-ideal) / target; d > maxDev {
			maxDev, worstAt = d, s.Sub(begin).Seconds()
		}
	}
	<-gen.done
	for _, w := range workers[:2] {
		if err := w.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.name, err)
		}
	}
	// Real time: the follower in this process reads the last commits,
	// which the stopped workers made visible (no count to poll for: the
	// total is what is measured).
	time.Sleep(2 * time.Second)
	delivered := out.total()
	finalErr := float64(delivered-target) / target
	t.Logf("delivered %d of %d (%+.3f%%), max deviation %.3f%% (at %.0fs)", delivered, target, 100*finalErr, 100*maxDev, worstAt)
	if math.Abs(finalErr) > 0.01 {
		t.Errorf("delivered %d passes, want within 1%% of %d", delivered, target)
	}
	if maxDev > 0.03 {
		t.Errorf("max deviation from the ideal curve %.3f%% of target, want ≤ 3%%", 100*maxDev)
	}

	// the counters agree with the output topic
	opts := []kgo.Opt{kgo.SeedBrokers(addr)}
	view, err := stats.NewView(ctx, group+".stats", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := view.WaitCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	var counted, offered uint64
	var sources []string
	for _, r := range view.View("campaign", nil) {
		counted += r.Total.Passed
		offered += r.Total.Offered
		sources = append(sources, r.Source)
	}
	var ledgered uint64
	for _, st := range loadLedgers(wctx, t, opts, group+".stats", input, 12) {
		if r, ok := st.Report("campaign"); ok {
			ledgered += r.Total.Passed
		}
	}
	t.Logf("stats topic: %d passes over %d sources (%d offered); ledgers: %d passes", counted, len(sources), offered, ledgered)
	if ledgered != uint64(delivered) {
		t.Errorf("ledgers count %d passes, the output topic holds %d", ledgered, delivered)
	}
	if counted != uint64(delivered) {
		t.Errorf("stats topic counts %d passes, the output topic holds %d", counted, delivered)
	}
}
