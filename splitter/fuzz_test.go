package splitter

import (
	"fmt"
	"strconv"
	"testing"
)

// FuzzThrottlerSchemeFormula checks that the throttler scheme assigns any
// key by its documented formulas, computed here with cespare/xxhash rather
// than this package's XXH64, and that the keys of the golden vectors keep
// their golden buckets:
//
//	layer bucket   = XXH64(key, XXH64(salt, 0)) mod 10000
//	variant bucket = XXH64(key, XXH64(experiment, XXH64(salt, 0))) mod 10000
//
// with 100 variants of weight 1, so that variant i owns variant buckets
// [100i, 100i+100).
func FuzzThrottlerSchemeFormula(f *testing.F) {
	golden := map[string]int{}
	for _, g := range goldenBuckets {
		if g.salt == "homepage" {
			golden[g.key] = g.bucket
		}
		f.Add([]byte(g.key))
	}
	goldenVariant := map[string]int{}
	for _, g := range goldenVariantBuckets {
		if g.salt == "homepage" && g.experiment == "new-ranker" {
			goldenVariant[g.key] = g.bucket
		}
	}
	vs := make([]Variant, 100)
	for i := range vs {
		vs[i] = Variant{Name: "v" + itoa(i), Weight: 1, Topic: "t"}
	}
	s := mustNew(f, []Layer{{Name: "l", Salt: "homepage", Experiments: []Experiment{
		{Name: "new-ranker", Start: 25, Allocation: 50, Variants: vs},
	}}})
	layerSeed := cespareXXH64([]byte("homepage"), 0)
	expSeed := cespareXXH64([]byte("new-ranker"), layerSeed)
	f.Fuzz(func(t *testing.T, key []byte) {
		lb := int(cespareXXH64(key, layerSeed) % Buckets)
		vb := int(cespareXXH64(key, expSeed) % Buckets)
		if g, ok := golden[string(key)]; ok && lb != g {
			t.Fatalf("key %q: layer bucket %d, golden %d", key, lb, g)
		}
		if g, ok := goldenVariant[string(key)]; ok && vb != g {
			t.Fatalf("key %q: variant bucket %d, golden %d", key, vb, g)
		}
		p := s.Place(key, nil)[0]
		if !p.HasBucket || p.Bucket != float64(lb) || p.In != (lb >= 2500 && lb < 7500) {
			t.Fatalf("key %q: %+v, want layer bucket %d", key, p, lb)
		}
		if p.In && p.Variant != "v"+itoa(vb/100) {
			t.Fatalf("key %q: variant %s, want v%d (variant bucket %d)", key, p.Variant, vb/100, vb)
		}
	})
}

// raised returns one layer per scheme whose vendor promises that raising
// an allocation moves no assigned key, with the allocation at level x of
// 0..65535: throttler, the experiment's allocation; growthbook, the
// coverage, and the end of a namespace; statsig, the user buckets
// allocated to the experiment; unleash, the rollout. Optimizely makes no
// such promise (a wider traffic allocation moves its ranges: see
// TestOptimizelyRaiseMovesKeys).
func raised(x uint16) []Layer {
	frac := float64(x) / 65535
	throttler := Experiment{Name: "t", Start: 10, Allocation: float64(1+int(frac*8999)) / 100, Variants: variants("t", 2, 3, 5)}
	coverage := Experiment{Name: "gb", Hash: SchemeGrowthBook, Variants: variants("gb", 0.2, 0.3, 0.5)}
	coverage.Coverage = &frac
	namespace := Experiment{Name: "gbns", Hash: SchemeGrowthBook, Variants: variants("gbns", 1, 1)}
	namespace.HashVersion = 2
	namespace.Namespace = &Namespace{ID: "ns", Start: 0.1, End: 0.1 + 0.9*(float64(x)+1)/65536}
	statsig := Experiment{Name: "st", Hash: SchemeStatsig, Variants: variants("st", 50, 50)}
	statsig.Seed = "salt"
	statsig.Segments = []string{"0-" + strconv.Itoa(int(frac*999))}
	unleash := Experiment{Name: "un", Hash: SchemeUnleash, Variants: variants("un", 1, 1, 1)}
	rollout := frac * 100
	unleash.Rollout = &rollout
	return []Layer{
		{Name: "throttler", Experiments: []Experiment{throttler}},
		{Name: "gb-coverage", Experiments: []Experiment{coverage}},
		{Name: "gb-namespace", Experiments: []Experiment{namespace}},
		{Name: "statsig", Salt: "layer-salt", Experiments: []Experiment{statsig}},
		{Name: "unleash", Experiments: []Experiment{unleash}},
	}
}

// FuzzRaiseAllocationKeepsAssignments checks, for any key and any two
// allocation levels lo <= hi, that a key assigned at lo keeps its
// experiment and variant at hi, in every scheme whose vendor promises it.
func FuzzRaiseAllocationKeepsAssignments(f *testing.F) {
	f.Add([]byte("user-42"), uint16(0), uint16(65535))
	f.Add([]byte("ünïcode"), uint16(1000), uint16(30000))
	f.Add([]byte(""), uint16(5), uint16(6))
	f.Fuzz(func(t *testing.T, key []byte, lo, hi uint16) {
		lo, hi = min(lo, hi), max(lo, hi)
		checkRaise(t, mustNew(t, raised(lo)), mustNew(t, raised(hi)), key)
	})
}

// checkRaise fails t if key, assigned by low, is not assigned alike by
// high, the same layers at a higher allocation.
func checkRaise(t *testing.T, low, high *Splitter, key []byte) {
	t.Helper()
	a, b := low.Place(key, nil), high.Place(key, nil)
	for i := range a {
		if a[i].In && (!b[i].In || a[i].Assignment != b[i].Assignment) {
			t.Fatalf("key %q, layer %s: %+v, then %+v at a higher allocation", key, a[i].Layer, a[i].Assignment, b[i].Assignment)
		}
	}
}

// TestRaiseAllocationAllSchemes is FuzzRaiseAllocationKeepsAssignments
// over a fixed grid, so that a plain test run checks the property on
// 2,000 keys at 10 pairs of levels.
func TestRaiseAllocationAllSchemes(t *testing.T) {
	levels := []uint16{0, 700, 6000, 20000, 32768, 50000, 65535}
	ss := make([]*Splitter, len(levels))
	for i, x := range levels {
		ss[i] = mustNew(t, raised(x))
	}
	var buf []byte
	for n := range 2000 {
		buf = keyN(buf, n)
		for i := range 4 {
			checkRaise(t, ss[i], ss[i+1], buf)
			checkRaise(t, ss[i], ss[i+3], buf)
		}
		checkRaise(t, ss[4], ss[5], buf)
		checkRaise(t, ss[5], ss[6], buf)
	}
}

// TestOptimizelyRaiseMovesKeys shows why FuzzRaiseAllocationKeepsAssignments
// leaves Optimizely out: its variants' ranges follow one another, so
// widening the traffic of a 50/50 experiment from 20% to 40% moves keys of
// the second variant to the first. Optimizely's documentation accordingly
// tells users that changing traffic allocation may rebucket them.
func TestOptimizelyRaiseMovesKeys(t *testing.T) {
	opt := func(width float64) *Splitter {
		e := Experiment{Name: "opt", Hash: SchemeOptimizely, Variants: variants("opt", width, width)}
		e.ExperimentID = "1886780721"
		return mustNew(t, oneLayer("opt", e))
	}
	narrow, wide := opt(10), opt(20)
	moved := 0
	var buf []byte
	for n := range 2000 {
		buf = keyN(buf, n)
		a, b := narrow.Assign(buf, nil), wide.Assign(buf, nil)
		if len(a) == 1 && fmt.Sprint(a) != fmt.Sprint(b) {
			moved++
		}
	}
	t.Logf("%d keys of 2000 moved when the traffic went from 20%% to 40%%", moved)
	if moved == 0 {
		t.Error("no key moved; the documentation's warning would be wrong")
	}
}
