package suite

import (
	"context"
	"fmt"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/stats"
)

// OutputCounter follows a topic (read_committed) from the start and keeps
// how many records of a budget it has seen, and when; and the records'
// own timestamps (when the worker produced them), which tell a late
// delivery (a transaction committed late, a broker that held its fetches)
// from a late decision.
type OutputCounter struct {
	Mu       sync.Mutex
	N        int
	Samples  []Sample
	Produced []time.Time // each record's timestamp, in the order read
}

type Sample struct {
	At time.Time
	N  int
}

func FollowOutput(ctx context.Context, t *testing.T, brokers, topic, budget string) *OutputCounter {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	c := &OutputCounter{}
	go func() {
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			var produced []time.Time
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == "throttler-budget" && string(h.Value) == budget {
						produced = append(produced, r.Timestamp)
					}
				}
			})
			c.Mu.Lock()
			c.N += len(produced)
			c.Produced = append(c.Produced, produced...)
			c.Samples = append(c.Samples, Sample{time.Now(), c.N})
			c.Mu.Unlock()
		}
	}()
	return c
}

// At returns the count seen by instant t.
func (c *OutputCounter) At(t time.Time) int {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	n := 0
	for _, s := range c.Samples {
		if s.At.After(t) {
			break
		}
		n = s.N
	}
	return n
}

// ProducedBy returns how many of the records read had a timestamp at or
// before t.
func (c *OutputCounter) ProducedBy(t time.Time) int {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	n := 0
	for _, p := range c.Produced {
		if !p.After(t) {
			n++
		}
	}
	return n
}

// MaxLag returns the longest a record waited between its timestamp and
// the follower's read, and when it was read.
func (c *OutputCounter) MaxLag() (lag time.Duration, readAt time.Time) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	i := 0
	for _, s := range c.Samples {
		for ; i < s.N && i < len(c.Produced); i++ {
			if l := s.At.Sub(c.Produced[i]); l > lag {
				lag, readAt = l, s.At
			}
		}
	}
	return lag, readAt
}

func (c *OutputCounter) Total() int {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.N
}

// maxDeviation samples the count every second over [begin, end] and
// returns its largest distance from the ideal curve to target, as a share
// of target, and when (seconds into the window).
func maxDeviation(count func(time.Time) int, begin, end time.Time, target int) (maxDev, worstAt float64) {
	for s := begin; !s.After(end); s = s.Add(time.Second) {
		ideal := float64(target) * s.Sub(begin).Seconds() / end.Sub(begin).Seconds()
		if d := math.Abs(float64(count(s))-ideal) / float64(target); d > maxDev {
			maxDev, worstAt = d, s.Sub(begin).Seconds()
		}
	}
	return maxDev, worstAt
}

// LogProducedCurve logs the curve of the records read by their own
// timestamps and the longest a record waited to be read: a curve that
// strays only as read is a delivery held up (a transaction that stayed
// open, a broker that stalled), not a pacing decision.
func LogProducedCurve(t *testing.T, out *OutputCounter, begin, end time.Time, target int) {
	t.Helper()
	maxDev, worstAt := maxDeviation(out.ProducedBy, begin, end, target)
	lag, at := out.MaxLag()
	t.Logf("by the records' timestamps: max deviation %.3f%% (at %.0fs); longest wait to be read %v (read at %.1fs)",
		100*maxDev, worstAt, lag.Round(time.Millisecond), at.Sub(begin).Seconds())
}

// BrokerProbe asks the broker for its metadata every 100 ms and keeps its
// slowest answer: a broker that stalled (a compaction that waited on the
// disk, a starved process) holds every client up, the workers' commits
// and a follower's fetches alike.
type BrokerProbe struct {
	mu      sync.Mutex
	slowest time.Duration
	at      time.Time
}

func ProbeBroker(ctx context.Context, t *testing.T, brokers string) *BrokerProbe {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...))
	if err != nil {
		t.Fatal(err)
	}
	p := &BrokerProbe{}
	go func() {
		defer cl.Close()
		for ctx.Err() == nil {
			start := time.Now()
			if err := cl.Ping(ctx); err == nil {
				d := time.Since(start)
				p.mu.Lock()
				if d > p.slowest {
					p.slowest, p.at = d, start
				}
				p.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}

// Slowest returns the slowest answer and when it was asked.
func (p *BrokerProbe) Slowest() (time.Duration, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slowest, p.at
}

func RunPacedWindow(t *testing.T, k BrokerKind) {
	const (
		target = 30000
		window = 60 * time.Second
		rate   = 2000
	)
	brk := SharedCluster(t, k, 12)
	addr, input, passed, group := brk.Addr, brk.Name("events"), brk.Name("passed"), brk.Name("paced")
	begin := time.Now().Add(20 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg := WriteFile(t, "worker.yaml", fmt.Sprintf(`brokers: [%s]
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
`, addr, group, input, passed, k.GroupYAML(GroupTimeouts{}), target, begin.Format(time.RFC3339), end.Format(time.RFC3339)))

	// the input topic first, so that the workers find it
	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", "12",
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(8*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign", "--users", "2000", "--skew", "1.2", "--seed", "7")
	WaitProducing(t, gen, addr, input)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := FollowOutput(ctx, t, addr, passed, "campaign")
	probe := ProbeBroker(ctx, t, addr)

	var workers []*Proc
	for i := 0; i < 3; i++ {
		workers = append(workers, Start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg))
	}
	time.Sleep(time.Until(begin.Add(window / 2))) // real time: half of the paced window
	if err := workers[2].Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("worker-2 after SIGTERM: %v", err)
	}
	t.Logf("worker-2 stopped at %.1fs into the window", time.Since(begin).Seconds())
	time.Sleep(time.Until(end.Add(5 * time.Second))) // real time: the rest of the window

	// the curve: sampled every second over the window
	for s := begin; !s.After(end); s = s.Add(time.Second) {
		if s.Sub(begin) <= 5*time.Second || s.Sub(begin)%(10*time.Second) == 0 {
			t.Logf("t=%2.0fs delivered %5d ideal %5.0f", s.Sub(begin).Seconds(), out.At(s), target*s.Sub(begin).Seconds()/window.Seconds())
		}
	}
	maxDev, worstAt := maxDeviation(out.At, begin, end, target)
	<-gen.Done
	for _, w := range workers[:2] {
		if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.Name, err)
		}
	}
	// Real time: the follower in this process reads the last commits,
	// which the stopped workers made visible (no count to poll for: the
	// total is what is measured).
	time.Sleep(2 * time.Second)
	delivered := out.Total()
	finalErr := float64(delivered-target) / target
	t.Logf("delivered %d of %d (%+.3f%%), max deviation %.3f%% (at %.0fs)", delivered, target, 100*finalErr, 100*maxDev, worstAt)
	if math.Abs(finalErr) > 0.01 {
		t.Errorf("delivered %d passes, want within 1%% of %d", delivered, target)
	}
	if maxDev > 0.03 {
		t.Errorf("max deviation from the ideal curve %.3f%% of target, want ≤ 3%%", 100*maxDev)
	}
	LogProducedCurve(t, out, begin, end, target)
	slow, at := probe.Slowest()
	t.Logf("the broker's slowest metadata answer: %v (asked at %.1fs)", slow.Round(time.Millisecond), at.Sub(begin).Seconds())

	// the counters agree with the output topic
	opts := []kgo.Opt{kgo.SeedBrokers(kafkabroker.Seeds(addr)...)}
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
	for _, st := range LoadLedgers(wctx, t, opts, group+".stats", input, 12) {
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
