package suite

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// StatsSample is, at one instant, the passes the cluster really made and
// each worker's estimate of them.
type StatsSample struct {
	At        time.Time
	Truth     float64     // passes of every open source of every worker
	Estimates []float64   // each worker's ClusterPassed (NaN: no lane yet)
	EstAt     []time.Time // the instants of those estimates (their snapshots')
	Lanes     []int       // each worker's open lanes of the budget
}

func RunStatsExchangeTrouble(t *testing.T, k BrokerKind) {
	const (
		target     = 10000
		window     = 40 * time.Second
		rate       = 1000
		partitions = 12
		syncEvery  = time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := SharedCluster(t, k, partitions)
	name := b.Name
	CreateTopic(ctx, t, b.Addr, name("events"), partitions, nil)
	proxy := NewFaultProxy(t, b.Addr)

	begin := time.Now().Add(8 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`brokers: [%s]
group: %s
topics: {input: [%s], output: %s, partitions: %d}
sync_interval: %v
%sfields: {budget: campaign, key: user, id: id}
budgets:
  - {name: campaign, target: %d, begin: %s, end: %s}
http: {listen: "127.0.0.1:0"}
`, b.Addr, name("sx"), name("events"), name("passed"), partitions, syncEvery, k.GroupYAML(FastTimeouts),
		target, begin.Format(time.RFC3339), end.Format(time.RFC3339))))
	if err != nil {
		t.Fatal(err)
	}

	g, err := loadgen.New(loadgen.Config{Seed: 9, Users: 2000, Skew: 1.2, Budgets: []loadgen.Budget{{Name: "campaign", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(b.Addr)...))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	genDone := make(chan error, 1)
	go func() {
		_, err := loadgen.Run(ctx, pc, g, loadgen.RunConfig{Topic: name("events"), Rate: rate, Duration: time.Until(end.Add(time.Second))})
		genDone <- err
	}()

	var trees []*flow.Tree
	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 3)
	for range 3 {
		w, tree, err := app.NewWorker(cfg, consumer.WithLogger(zerolog.Nop()),
			consumer.StatsClientOpts(kgo.Dialer(proxy.Dial)))
		if err != nil {
			t.Fatal(err)
		}
		trees = append(trees, tree)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				errs <- err
			}
		}()
	}

	// Sample the truth and the estimates every 100ms.
	var mu sync.Mutex
	var samples []StatsSample
	sampling := make(chan struct{})
	go func() {
		defer close(sampling)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var reports []flow.Report
		for {
			select {
			case <-wctx.Done():
				return
			case now := <-tick.C:
				s := StatsSample{At: now}
				for _, tr := range trees {
					reports = tr.Reports(now, reports[:0])
					lanes := 0
					for _, r := range reports {
						if r.Budget == "campaign" {
							s.Truth += float64(r.Total.Passed)
							lanes++
						}
					}
					s.Lanes = append(s.Lanes, lanes)
					var snap flow.Snapshot
					snap.ClusterPassed = math.NaN()
					if c := tr.Controller("campaign"); c != nil { // once a partition opened its lane
						snap = c.Snapshot()
					}
					s.Estimates = append(s.Estimates, snap.ClusterPassed)
					s.EstAt = append(s.EstAt, snap.At)
				}
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}
	}()

	type trouble struct {
		name       string
		from, to   time.Duration // after begin
		start, fix func()
	}
	troubles := []trouble{
		{"stall", 8 * time.Second, 16 * time.Second, proxy.Stall, proxy.Restore},
		{"cut", 23 * time.Second, 31 * time.Second, proxy.Cut, proxy.Restore},
	}
	for _, tr := range troubles {
		time.Sleep(time.Until(begin.Add(tr.from))) // real time: the troubles' schedule
		tr.start()
		time.Sleep(time.Until(begin.Add(tr.to)))
		tr.fix()
	}
	time.Sleep(time.Until(end.Add(2 * time.Second))) // real time: the rest of the window
	stop()
	wg.Wait()
	<-sampling
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	if err := <-genDone; err != nil {
		t.Errorf("loadgen: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	// sampleAt is the last sample taken at or before at. The sampler's
	// ticks come late on a loaded machine: a span is measured between the
	// instants of the samples that bound it, not the instants asked for.
	sampleAt := func(at time.Time) StatsSample {
		var v StatsSample
		for _, s := range samples {
			if s.At.After(at) {
				break
			}
			v = s
		}
		return v
	}
	truthAt := func(at time.Time) float64 { return sampleAt(at).Truth }
	// truthThen is the truth at an instant between samples, linear
	// between the two that bound it (ok false before the first).
	truthThen := func(at time.Time) (float64, bool) {
		i, _ := slices.BinarySearchFunc(samples, at, func(s StatsSample, at time.Time) int { return s.At.Compare(at) })
		switch {
		case i == len(samples):
			return samples[i-1].Truth, true
		case samples[i].At.Equal(at):
			return samples[i].Truth, true
		case i == 0:
			return 0, false
		}
		a, b := samples[i-1], samples[i]
		f := float64(at.Sub(a.At)) / float64(b.At.Sub(a.At))
		return a.Truth + f*(b.Truth-a.Truth), true
	}
	ideal := func(d time.Duration) float64 { return target * d.Seconds() / window.Seconds() }
	// workerErrors is, by worker, the largest |estimate - truth| over the
	// samples in [from, to), each estimate against the truth at its own
	// instant: a snapshot is the tuner's latest, and under load the
	// tuner's visits come late, which is no error of the estimate. signed
	// is that error's estimate - truth, ages the oldest of those
	// snapshots at its sample's instant, lanes the fewest and the most
	// open lanes of the budget (by all workers) over the samples.
	type estErrors struct {
		abs, signed []float64
		ages        []time.Duration
		lanes       [2]int
	}
	workerErrors := func(from, to time.Time) estErrors {
		e := estErrors{abs: make([]float64, len(trees)), signed: make([]float64, len(trees)), ages: make([]time.Duration, len(trees)), lanes: [2]int{math.MaxInt, 0}}
		for _, s := range samples {
			if s.At.Before(from) || !s.At.Before(to) {
				continue
			}
			open := 0
			for _, n := range s.Lanes {
				open += n
			}
			e.lanes = [2]int{min(e.lanes[0], open), max(e.lanes[1], open)}
			for i, est := range s.Estimates {
				if math.IsNaN(est) {
					continue // no lane opened yet
				}
				if truth, ok := truthThen(s.EstAt[i]); ok && math.Abs(est-truth) >= e.abs[i] {
					e.abs[i], e.signed[i] = math.Abs(est-truth), est-truth
				}
				e.ages[i] = max(e.ages[i], s.At.Sub(s.EstAt[i]))
			}
		}
		return e
	}
	worstError := func(from, to time.Time) float64 {
		return slices.Max(workerErrors(from, to).abs)
	}
	// The error band of healthy operation: the 5 s before the first
	// trouble, once the window has run 2 s.
	band := worstError(begin.Add(2*time.Second), begin.Add(troubles[0].from))
	tol := max(1.5*band, 0.01*target)
	t.Logf("healthy: worst estimate error %.0f passes; tolerance after recovery %.0f (%.2f%% of target)", band, tol, 100*tol/target)
	for _, tr := range troubles {
		from, to := begin.Add(tr.from), begin.Add(tr.to)
		s0, s1 := sampleAt(from), sampleAt(to)
		passed := s1.Truth - s0.Truth
		want := ideal(s1.At.Sub(s0.At))
		during := worstError(from, to)
		// reconverged: the first instant after which every sample up
		// to 3 sync intervals later... is within tol.
		var back time.Duration = -1
		for _, s := range samples {
			if s.At.Before(to) {
				continue
			}
			if worstError(s.At, s.At.Add(time.Second)) <= tol {
				back = s.At.Sub(to)
				break
			}
		}
		t.Logf("%s for %v: %.0f passes over the %v between its samples (ideal %.0f, %.3f×), worst estimate error %.0f; back within %.0f after %v",
			tr.name, tr.to-tr.from, passed, s1.At.Sub(s0.At).Round(time.Millisecond), want, passed/want, during, tol, back.Round(10*time.Millisecond))
		var trail []string
		for d := time.Duration(0); d < 4*time.Second; d += 500 * time.Millisecond {
			e := workerErrors(to.Add(d), to.Add(d+500*time.Millisecond))
			var each []string
			for i := range e.signed {
				each = append(each, fmt.Sprintf("%+.0f/%v", e.signed[i], e.ages[i].Round(10*time.Millisecond)))
			}
			trail = append(trail, fmt.Sprintf("+%.1fs %s lanes %d-%d", d.Seconds(), strings.Join(each, " "), e.lanes[0], e.lanes[1]))
		}
		t.Logf("%s: each worker's worst estimate error (estimate - truth) after the restore and its oldest snapshot, per half second, and the open lanes of all workers: %v", tr.name, trail)
		if passed > 1.1*want {
			t.Errorf("%s: %.0f passes while the stats exchange was down, over 1.1× the ideal %.0f", tr.name, passed, want)
		}
		if back < 0 || back > 3*syncEvery {
			t.Errorf("%s: estimates not back within %.0f passes of the truth within 3 sync intervals (%v)", tr.name, tol, back)
		}
	}
	final := truthAt(end.Add(2 * time.Second))
	t.Logf("window end: %.0f passes of %d (%.3f×)", final, target, final/target)
	if final > 1.1*target {
		t.Errorf("%.0f passes over the window, over 1.1× the target %d", final, target)
	}
}
