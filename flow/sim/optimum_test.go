package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteOptimum tries every number of events taken from every bin.
func bruteOptimum(bins, good []int, ideal []float64, target, dev float64) float64 {
	want := int(math.Round(target))
	best := -1
	d := make([]int, len(bins))
	var walk func(k, p, gain int)
	walk = func(k, p, gain int) {
		if k == len(bins) {
			if p == want && gain > best {
				best = gain
			}
			return
		}
		for x := 0; x <= bins[k]; x++ {
			q := p + x
			if math.Abs(float64(q)-ideal[k]) > dev*target+1e-9 {
				continue
			}
			d[k] = x
			walk(k+1, q, gain+min(x, good[k]))
		}
	}
	walk(0, 0, 0)
	if best < 0 {
		return math.NaN()
	}
	return float64(best) / float64(want)
}

// The dynamic programme finds what trying every choice finds, on small
// random windows.
func TestOptimumMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 400 {
		k := 1 + rng.IntN(6)
		bins, good, ideal := make([]int, k), make([]int, k), make([]float64, k)
		total := 0
		for i := range bins {
			bins[i] = rng.IntN(5)
			good[i] = rng.IntN(bins[i] + 1)
			total += bins[i]
		}
		if total == 0 {
			continue
		}
		target := float64(1 + rng.IntN(total))
		for i := range ideal {
			ideal[i] = target * float64(i+1) / float64(k)
		}
		dev := rng.Float64() * 0.6
		got, want := optimum(bins, good, ideal, target, dev), bruteOptimum(bins, good, ideal, target, dev)
		if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("trial %d: bins %v good %v target %.0f dev %.2f: %v, want %v", trial, bins, good, target, dev, got, want)
		}
	}
}

// A crowd of better events: with room to run ahead of the course, the
// selection takes more of them; on the course, it cannot.
func TestOptimumCrowd(t *testing.T) {
	bins := []int{10, 10, 40, 10, 10}
	good := []int{1, 1, 20, 1, 1}
	ideal := []float64{4, 8, 12, 16, 20}
	tight, some, loose := optimum(bins, good, ideal, 20, 0), optimum(bins, good, ideal, 20, 0.2), optimum(bins, good, ideal, 20, 0.4)
	// On course: 4 a bin, 1 + 1 + 4 + 1 + 1 good. Within 4 events: the
	// good one of each quiet bin, 2 plain to be 4 by the second row, 12
	// of the crowd (16 by the third), 2 plain to end on 20. Within 8:
	// none before the crowd, all 20 of its good ones.
	if tight != 8.0/20 || some != 16.0/20 || loose != 1 {
		t.Errorf("optimum %.2f on course (want 0.40), %.2f within 20%% (want 0.80), %.2f within 40%% (want 1)", tight, some, loose)
	}
	// Under the upper caps alone the selection may wait for the crowd,
	// however far behind: 16 of it by its row, the good one of each bin
	// after, 2 plain to end on 20.
	if caps := paced(bins, good, ideal, 20, math.Inf(1), 0.2); caps != 18.0/20 {
		t.Errorf("under the caps alone, within 20%%: %.2f, want 0.90", caps)
	}
	if p := optimum(bins, good, ideal, 200, 0.5); !math.IsNaN(p) {
		t.Errorf("a target above the events offered: %v, want NaN", p)
	}
}
