package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

func mustParse(t *testing.T, yaml string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func mustRun(t *testing.T, sc *Scenario) *Result {
	t.Helper()
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// In partition mode every event produced is decided and committed once,
// whatever happens to the nodes: joins, leaves, crashes (whose uncommitted
// decisions are read again by the next owner) and broker restarts.
func TestPartitionEventsOnce(t *testing.T) {
	const base = `
duration: 60s
seed: 3
partitions: {count: 6, rate: 600}
budgets:
  - {name: b, target: 1e9, begin: 0s, end: 60s}
`
	cases := map[string]string{
		"steady": "nodes: [{name: a}, {name: b}]",
		"churn":  "nodes: [{name: a, crash: 10.05s}, {name: b, stop: 30s}, {name: c, start: 20s}, {name: d, start: 12s}]",
		"restart": "restarts: [{from: 20s, to: 23s}]\n" +
			"nodes: [{name: a}, {name: b}]",
	}
	for name, nodes := range cases {
		t.Run(name, func(t *testing.T) {
			res := mustRun(t, mustParse(t, base+nodes))
			// 600 events/s over 60 s; the last catch-up is long over.
			if got := res.Budgets[0].Offered; got != 36000 {
				t.Errorf("offered %d, want the 36000 produced", got)
			}
			if res.Budgets[0].Passed != res.Budgets[0].Offered {
				t.Errorf("passed %d of %d with a budget that never binds", res.Budgets[0].Passed, res.Budgets[0].Offered)
			}
		})
	}
}

// A crash loses what the node decided since its last commit: those
// decisions never count, their events are decided again by the next owner,
// which restores the partitions' counters from their last commit.
func TestCrashLosesUncommitted(t *testing.T) {
	sc := mustParse(t, `
duration: 30s
seed: 4
partitions: {count: 2, rate: 200, commit_interval: 500ms, session_timeout: 2s}
nodes: [{name: a, crash: 10.4s}, {name: b, start: 11s}]
budgets:
  - {name: b, target: 1e9, begin: 0s, end: 30s}
`)
	res := mustRun(t, sc)
	var at10, at13 Row
	for _, r := range res.Timeline {
		switch r.T {
		case 10:
			at10 = r
		case 13:
			at13 = r
		}
	}
	// Committed at 10 s: 2000 events. Nothing is committed from the crash
	// until b owns the partitions at 12.4 s; by 13 s it has read the
	// 400 lost and what came meanwhile at 10 times the rate.
	if at10.Offered != 2000 {
		t.Errorf("offered at 10 s: %d, want 2000", at10.Offered)
	}
	if at13.Offered <= at10.Offered+400 || at13.Offered > 2600 {
		t.Errorf("offered at 13 s: %d, want the backlog read again (between %d and 2600)", at13.Offered, at10.Offered+400)
	}
}

// Publications made while the exchange is out are lost, and readers keep
// the view they had.
func TestExchangeOutage(t *testing.T) {
	e0 := epoch.UnixNano()
	x := newLossyExchange(0, 0, 1, [][2]int64{{e0 + 10, e0 + 20}})
	rep := func(at int64) []flow.Report {
		return []flow.Report{{Budget: "b", Source: "s", At: time.Unix(0, at)}}
	}
	view := func(now int64) int64 {
		x.advance(now)
		v := x.View("b", nil)
		if len(v) == 0 {
			return -1
		}
		return v[0].At.UnixNano() - e0
	}
	_ = x.Publish(rep(e0 + 5))
	if got := view(e0 + 5); got != 5 {
		t.Fatalf("before the outage: view at %d, want 5", got)
	}
	x.advance(e0 + 12)
	_ = x.Publish(rep(e0 + 12))
	if got := view(e0 + 15); got != 5 {
		t.Fatalf("during the outage: view at %d, want 5 (frozen)", got)
	}
	if got := view(e0 + 25); got != 5 {
		t.Fatalf("after the outage: view at %d, want 5 (the publication made during it is lost)", got)
	}
	_ = x.Publish(rep(e0 + 25))
	if got := view(e0 + 26); got != 25 {
		t.Fatalf("after the outage: view at %d, want 25", got)
	}
}

// Reward delays: Delay is the mean of every distribution; the lognormal's
// tail grows with sigma.
func TestRewardDelays(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	for _, r := range []RewardSpec{
		{Delay: Duration(4 * time.Second)},
		{Delay: Duration(4 * time.Second), Distribution: "exponential"},
		{Delay: Duration(4 * time.Second), Distribution: "lognormal", Sigma: 1.5},
	} {
		ds := make([]float64, n)
		var sum float64
		for i := range ds {
			ds[i] = float64(r.draw(rng)) / 1e9
			sum += ds[i]
		}
		slices.Sort(ds)
		mean, p50, p99 := sum/n, ds[n/2], ds[n*99/100]
		t.Logf("%-11s mean %.2fs median %.2fs p99 %.1fs", r.Distribution, mean, p50, p99)
		if math.Abs(mean-4) > 0.1 {
			t.Errorf("%s: mean %.3fs, want 4s", r.Distribution, mean)
		}
		switch r.Distribution {
		case "":
			if p50 != 4 || p99 != 4 {
				t.Errorf("fixed: median %v, p99 %v", p50, p99)
			}
		case "exponential":
			if math.Abs(p50-4*math.Ln2) > 0.1 {
				t.Errorf("exponential: median %.2fs, want %.2fs", p50, 4*math.Ln2)
			}
		case "lognormal":
			if want := 4 * math.Exp(-1.5*1.5/2); math.Abs(p50-want) > 0.05 || p99 < 10*p50 {
				t.Errorf("lognormal: median %.2fs (want %.2fs), p99 %.1fs", p50, want, p99)
			}
		}
	}
}

// Drift shifts and spreads a budget's scores from its instant on.
func TestScoreDrift(t *testing.T) {
	b := &budget{dist: "normal", drift: []Drift{{At: Duration(10 * time.Second), Shift: 2}, {At: Duration(20 * time.Second), Shift: -1, Scale: 3}}}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		at         time.Duration
		mean, std_ float64
	}{{5 * time.Second, 0, 1}, {15 * time.Second, 2, 1}, {25 * time.Second, -1, 3}} {
		var s, s2 float64
		const n = 100000
		for range n {
			x := b.score(rng, epoch.Add(c.at).UnixNano())
			s += x
			s2 += x * x
		}
		mean := s / n
		std := math.Sqrt(s2/n - mean*mean)
		if math.Abs(mean-c.mean) > 0.05 || math.Abs(std-c.std_) > 0.05 {
			t.Errorf("at %v: mean %.3f std %.3f, want %v and %v", c.at, mean, std, c.mean, c.std_)
		}
	}
}
