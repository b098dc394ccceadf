package splitter

import (
	"math/rand/v2"
	"testing"
)

// split draws n events over weights with a seeded generator.
func split(n int, weights []float64, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var sum float64
	for _, w := range weights {
		sum += w
	}
	out := make([]uint64, len(weights))
	for range n {
		x := rng.Float64() * sum
		k := 0
		for k < len(weights)-1 && x >= weights[k] {
			x -= weights[k]
			k++
		}
		out[k]++
	}
	return out
}

// TestCheckSRMFairAndSkewed: a fair 50/50 and a fair 20/30/50 split of
// 100,000 events are not flagged; a 50/50 split that loses 5% of one arm
// is flagged at 5% (8 standard deviations) and so is a split keyed to
// 49/51 (6 standard deviations).
func TestCheckSRMFairAndSkewed(t *testing.T) {
	for _, c := range []struct {
		name     string
		obs      []uint64
		weights  []float64
		mismatch bool
	}{
		{"fair 50/50", split(100_000, []float64{1, 1}, 7), []float64{1, 1}, false},
		{"fair 20/30/50", split(100_000, []float64{20, 30, 50}, 8), []float64{20, 30, 50}, false},
		{"arm b loses 5%", func() []uint64 { o := split(100_000, []float64{1, 1}, 9); o[1] -= o[1] / 20; return o }(), []float64{1, 1}, true},
		{"49/51 against 50/50", split(100_000, []float64{49, 51}, 10), []float64{1, 1}, true},
	} {
		r := CheckSRM(c.obs, c.weights)
		t.Logf("%s: %v chi2 %.2f p %.3g", c.name, c.obs, r.Chi2, r.P)
		if !r.Checked || r.Mismatch != c.mismatch {
			t.Errorf("%s: %+v, want mismatch %v", c.name, r, c.mismatch)
		}
	}
}

// TestCheckSRMFalseAlarms: over 1000 fair 50/50 splits of 99,968 events the
// check raises about 0.1% false alarms (at most 5 here; the expectation is
// 1).
func TestCheckSRMFalseAlarms(t *testing.T) {
	alarms := 0
	for seed := range uint64(1000) {
		// A fair coin per event: the count of one bits of random words.
		rng := rand.New(rand.NewPCG(seed, 2))
		var a uint64
		for range 100_000 / 64 {
			a += uint64(popcount(rng.Uint64()))
		}
		b := uint64(100_000/64*64) - a
		if CheckSRM([]uint64{a, b}, []float64{1, 1}).Mismatch {
			alarms++
		}
	}
	t.Logf("%d false alarms in 1000 fair splits", alarms)
	if alarms > 5 {
		t.Fatalf("%d false alarms in 1000 fair splits", alarms)
	}
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func TestCheckSRMNeedsEnoughEvents(t *testing.T) {
	if r := CheckSRM([]uint64{900, 10}, []float64{1, 1}); r.Checked || r.Mismatch || r.P != 1 {
		t.Fatalf("910 events: %+v", r)
	}
	// 1000 events, but a 0.1% variant expects 1: not checked.
	if r := CheckSRM([]uint64{1000, 0}, []float64{999, 1}); r.Checked {
		t.Fatalf("tiny variant: %+v", r)
	}
	if r := CheckSRM([]uint64{600, 400}, []float64{1, 1}); !r.Checked || !r.Mismatch {
		t.Fatalf("600/400: %+v", r)
	}
}
