package sim

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// figures are one budget's figures in one run, computed from the
// timeline (rows every sync interval) and the final result.
type figures struct {
	final     float64 // (achieved − target) / target, at the end
	maxDev    float64 // max |achieved − ideal| / target, from the rows at or after from
	devEvents float64 // the same in events
	behind    float64 // max (ideal − achieved) / target: how far behind
	ahead     float64 // max (achieved − ideal) / target
	over      float64 // max (achieved − target) / target at any row: above the target itself
	recover   float64 // longest span (s) more than 1% of target behind the ideal
	precision float64 // NaN unless scored
	// optimum: the paced offline optimum at the run's own maximum
	// deviation (NaN unless a scored window budget); ratio: precision
	// over it
	optimum, ratio float64
	refused        uint64 // events offered and not passed
}

// figuresOf computes a budget's figures from rows at or after from (in
// seconds of the run).
func figuresOf(res *Result, name string, from float64) figures {
	f := figures{precision: math.NaN(), optimum: math.NaN(), ratio: math.NaN(), over: math.Inf(-1)}
	var target float64
	var rewards bool
	for _, b := range res.Budgets {
		if b.Name == name {
			target, rewards = b.Target, b.Kind == "rewards"
			f.final = b.FinalError
			f.refused = b.Offered - b.Passed
			if b.ScorePrecision != nil {
				f.precision = *b.ScorePrecision
			}
			if b.OptimumPrecision != nil {
				f.optimum, f.ratio = *b.OptimumPrecision, *b.PrecisionRatio
			}
		}
	}
	behindSince := math.NaN()
	for _, r := range res.Timeline {
		if r.Budget != name {
			continue
		}
		a := float64(r.Passed)
		if rewards {
			a = float64(r.Rewarded)
		}
		f.over = math.Max(f.over, (a-target)/target)
		if r.T < from {
			continue
		}
		d := a - r.Ideal
		f.maxDev = math.Max(f.maxDev, math.Abs(d)/target)
		f.devEvents = math.Max(f.devEvents, math.Abs(d))
		f.behind = math.Max(f.behind, -d/target)
		f.ahead = math.Max(f.ahead, d/target)
		switch {
		case -d/target > 0.01 && math.IsNaN(behindSince):
			behindSince = r.T
		case -d/target <= 0.01 && !math.IsNaN(behindSince):
			f.recover = math.Max(f.recover, r.T-behindSince)
			behindSince = math.NaN()
		}
	}
	if !math.IsNaN(behindSince) {
		f.recover = math.Inf(1)
	}
	return f
}

// sweep runs a scenario file with seeds (0: the file's own) and returns
// every budget's figures, by budget name, in seed order.
func sweep(t testing.TB, file string, seeds []uint64, from map[string]float64) map[string][]figures {
	t.Helper()
	out := map[string][]figures{}
	for _, seed := range seeds {
		res := runFile(t, file, seed)
		for _, b := range res.Budgets {
			out[b.Name] = append(out[b.Name], figuresOf(res, b.Name, from[b.Name]))
		}
	}
	return out
}

// runFile runs a scenario of testdata with a seed (0: the file's own).
func runFile(t testing.TB, file string, seed uint64) *Result {
	t.Helper()
	sc, err := Load(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	if seed != 0 {
		sc.Seed = seed
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// seedsFrom returns n seeds from first on.
func seedsFrom(first uint64, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = first + uint64(i)
	}
	return s
}

// summary is "mean / worst" of one figure over runs; worst is the largest
// unless low is set.
func summary(fs []figures, get func(figures) float64, low bool) (mean, worst float64) {
	worst = get(fs[0])
	for _, f := range fs {
		v := get(f)
		mean += v / float64(len(fs))
		if low && v < worst || !low && v > worst {
			worst = v
		}
	}
	return mean, worst
}

func (f figures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "final %+.3f%% dev %.3f%% (%.1f ev) behind %.3f%% ahead %.3f%% recover %.0fs",
		100*f.final, 100*f.maxDev, f.devEvents, 100*f.behind, 100*f.ahead, f.recover)
	if !math.IsNaN(f.precision) {
		fmt.Fprintf(&b, " precision %.4f", f.precision)
	}
	return b.String()
}
