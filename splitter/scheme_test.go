package splitter

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func f64(x float64) *float64 { return &x }

// vendorLayers is one valid layer per vendor scheme, the GrowthBook and
// Statsig ones with two mutually exclusive experiments.
func vendorLayers() []Layer {
	gb := func(name string, start, end float64) Experiment {
		e := Experiment{Name: name, Hash: SchemeGrowthBook, Variants: variants(name, 0.5, 0.5)}
		e.HashVersion, e.Coverage = 2, f64(0.8)
		e.Namespace = &Namespace{ID: "checkout", Start: start, End: end}
		return e
	}
	opt := Experiment{Name: "opt", Hash: SchemeOptimizely, Start: 25, Variants: variants("opt", 24.99, 4)}
	opt.ExperimentID = "1886780721"
	st := func(name, seed string, segments ...string) Experiment {
		e := Experiment{Name: name, Hash: SchemeStatsig, Variants: variants(name, 70, 20, 10)}
		e.Seed, e.Segments = seed, segments
		return e
	}
	un := Experiment{Name: "flag", Hash: SchemeUnleash, Variants: variants("flag", 33, 33, 34)}
	un.Rollout, un.StringEncoding = f64(55), EncodingUTF16
	return []Layer{
		{Name: "gb", Experiments: []Experiment{gb("gb-a", 0, 0.4), gb("gb-b", 0.4, 1)}},
		{Name: "opt", Experiments: []Experiment{opt}},
		{Name: "st", Salt: "layer-salt", Experiments: []Experiment{st("st-a", "salt-a", "0-329"), st("st-b", "salt-b", "330", "331-999")}},
		{Name: "un", Experiments: []Experiment{un}},
	}
}

func TestVendorLayersValid(t *testing.T) {
	if ps := Validate(vendorLayers()); ps != nil {
		t.Fatalf("Validate = %v", ps)
	}
	s := mustNew(t, vendorLayers())
	want := map[string][]float64{
		"gb-a": {0.5, 0.5}, "gb-b": {0.5, 0.5},
		"opt":  {2499.0 / 2899, 400.0 / 2899},
		"st-a": {0.7, 0.2, 0.1}, "st-b": {0.7, 0.2, 0.1},
		"flag": {0.33, 0.33, 0.34},
	}
	for _, e := range s.Experiments() {
		for k, v := range e.Variants {
			if math.Abs(v.Share-want[e.Experiment][k]) > 1e-12 {
				t.Errorf("%s/%s: share %v, want %v", e.Experiment, v.Name, v.Share, want[e.Experiment][k])
			}
		}
	}
}

// TestVendorExclusive checks that the experiments of a GrowthBook layer
// (namespaces) and of a Statsig layer (segments) never both hold a key,
// and that both of each hold some.
func TestVendorExclusive(t *testing.T) {
	s := mustNew(t, vendorLayers())
	held := map[string]int{}
	var buf []byte
	for n := range 20_000 {
		buf = keyN(buf, n)
		for _, a := range s.Assign(buf, nil) {
			held[a.Experiment]++
		}
		if as := s.Assign(buf, nil); len(as) > 4 {
			t.Fatalf("key %s: %d assignments in 4 layers: %v", buf, len(as), as)
		}
	}
	t.Logf("keys held per experiment: %v", held)
	for _, e := range []string{"gb-a", "gb-b", "st-a", "st-b", "opt", "flag"} {
		if held[e] == 0 {
			t.Errorf("experiment %s holds no key of 20000", e)
		}
	}
}

func TestVendorValidation(t *testing.T) {
	mod := func(f func(ls []Layer)) []Layer { ls := vendorLayers(); f(ls); return ls }
	cases := []struct {
		name   string
		layers []Layer
		path   string
		reason string
	}{
		{"unknown scheme", mod(func(ls []Layer) { ls[1].Experiments[0].Hash = "launchdarkly" }), "layers[1].experiments[0].hash", "must be one of throttler, growthbook"},
		{"mixed schemes", mod(func(ls []Layer) { ls[0].Experiments[1].Hash = SchemeThrottler }), "layers[0].experiments[1].hash", `"throttler" differs from the "growthbook" scheme`},
		{"param of another scheme", mod(func(ls []Layer) { ls[1].Experiments[0].Seed = "x" }), "layers[1].experiments[0].seed", "not used by the optimizely hash scheme"},
		{"vendor param on throttler", []Layer{{Name: "t", Experiments: []Experiment{{Name: "e", Allocation: 10, Variants: variants("t", 1), VendorParams: VendorParams{Coverage: f64(1)}}}}}, "layers[0].experiments[0].coverage", "not used by the throttler hash scheme"},
		{"allocation on a vendor scheme", mod(func(ls []Layer) { ls[3].Experiments[0].Allocation = 10 }), "layers[3].experiments[0].allocation", "not used by the unleash hash scheme"},
		{"hash version", mod(func(ls []Layer) { ls[0].Experiments[0].HashVersion = 3 }), "layers[0].experiments[0].hash_version", "must be 1 or 2, got 3"},
		{"coverage", mod(func(ls []Layer) { ls[0].Experiments[0].Coverage = f64(1.5) }), "layers[0].experiments[0].coverage", "from 0 to 1, got 1.5"},
		{"namespace bounds", mod(func(ls []Layer) { ls[0].Experiments[0].Namespace.End = 0 }), "layers[0].experiments[0].namespace", "0 <= start < end <= 1"},
		{"namespaces overlap", mod(func(ls []Layer) { ls[0].Experiments[1].Namespace.Start = 0.3 }), "layers[0].experiments[1].namespace", "overlaps experiments[0]"},
		{"namespace ids differ", mod(func(ls []Layer) { ls[0].Experiments[1].Namespace.ID = "other" }), "layers[0].experiments[1].namespace.id", "differs from experiments[0]'s"},
		{"one growthbook variation", mod(func(ls []Layer) { ls[0].Experiments[0].Variants = variants("x", 1) }), "layers[0].experiments[0].variants", "fewer than 2 variants"},
		{"optimizely id", mod(func(ls []Layer) { ls[1].Experiments[0].ExperimentID = "" }), "layers[1].experiments[0].experiment_id", "required by the optimizely hash scheme"},
		{"optimizely weight", mod(func(ls []Layer) { ls[1].Experiments[0].Variants[0].Weight = 24.995 }), "layers[1].experiments[0].variants[0].weight", "multiple of 0.01"},
		{"optimizely past 100", mod(func(ls []Layer) { ls[1].Experiments[0].Variants[1].Weight = 75.02 }), "layers[1].experiments[0].variants", "past 100%"},
		{"optimizely group", mod(func(ls []Layer) {
			e := ls[1].Experiments[0]
			e.Name = "opt-2"
			ls[1].Experiments = append(ls[1].Experiments, e)
		}), "layers[1].experiments", "holds one experiment"},
		{"statsig salt", mod(func(ls []Layer) { ls[2].Experiments[0].Seed = "" }), "layers[2].experiments[0].seed", "required by the statsig hash scheme"},
		{"statsig segment", mod(func(ls []Layer) { ls[2].Experiments[0].Segments = []string{"0-1000"} }), "layers[2].experiments[0].segments[0]", `from 0 to 999 with N <= M, got "0-1000"`},
		{"statsig segments overlap", mod(func(ls []Layer) { ls[2].Experiments[1].Segments = []string{"329-400"} }), "layers[2].experiments[1].segments", "overlap those of experiments[0]"},
		{"statsig layer salt", mod(func(ls []Layer) { ls[2].Salt = "" }), "layers[2].salt", "Statsig's layer salt"},
		{"statsig sizes", mod(func(ls []Layer) { ls[2].Experiments[0].Variants[2].Weight = 9.9 }), "layers[2].experiments[0].variants", "weights sum to 99.9%"},
		{"statsig weight", mod(func(ls []Layer) { ls[2].Experiments[0].Variants[2].Weight = 10.05 }), "layers[2].experiments[0].variants[2].weight", "multiple of 0.1"},
		{"unleash weight", mod(func(ls []Layer) { ls[3].Experiments[0].Variants[0].Weight = 1.5 }), "layers[3].experiments[0].variants[0].weight", "whole number"},
		{"unleash rollout", mod(func(ls []Layer) { ls[3].Experiments[0].Rollout = f64(101) }), "layers[3].experiments[0].rollout", "from 0 to 100, got 101"},
		{"unused layer salt", mod(func(ls []Layer) { ls[3].Salt = "s" }), "layers[3].salt", "not used by the unleash hash scheme"},
		{"string encoding on optimizely", mod(func(ls []Layer) { ls[1].Experiments[0].StringEncoding = EncodingUTF8 }), "layers[1].experiments[0].string_encoding", "only by growthbook, unleash"},
		{"string encoding", mod(func(ls []Layer) { ls[3].Experiments[0].StringEncoding = "latin1" }), "layers[3].experiments[0].string_encoding", `must be "utf8" or "utf16", got "latin1"`},
	}
	for _, tc := range cases {
		ps := Validate(tc.layers)
		found := false
		for _, p := range ps {
			found = found || (p.Path == tc.path && strings.Contains(p.Reason, tc.reason))
		}
		if !found || len(ps) != 1 {
			t.Errorf("%s: Validate = %v, want one problem at %s containing %q", tc.name, ps, tc.path, tc.reason)
		}
	}
}

// TestVendorAssignDoesNotAllocate checks every scheme's Assign, and Place,
// with the JavaScript string variants too.
func TestVendorAssignDoesNotAllocate(t *testing.T) {
	ls := vendorLayers()
	ls[0].Experiments[0].StringEncoding, ls[0].Experiments[1].StringEncoding = EncodingUTF8, EncodingUTF8
	ls[3].Experiments[0].StringEncoding = EncodingUTF8
	for _, layers := range [][]Layer{vendorLayers(), ls} {
		s := mustNew(t, layers)
		key := []byte("user-ü-42-7f3c9a10-5b2e-4d8e-9c61")
		dst := make([]Assignment, 0, len(layers))
		pdst := make([]Placement, 0, len(layers))
		if n := testing.AllocsPerRun(200, func() { dst = s.Assign(key, dst[:0]) }); n != 0 {
			t.Errorf("Assign allocates %v times per call", n)
		}
		if n := testing.AllocsPerRun(200, func() { pdst = s.Place(key, pdst[:0]) }); n != 0 {
			t.Errorf("Place allocates %v times per call", n)
		}
		if len(pdst) != len(layers) {
			t.Errorf("Place = %v, want one placement per layer", pdst)
		}
	}
}

// TestStringEncodings checks that the string encoding changes nothing for
// ASCII keys and something for others, in both schemes that have one.
func TestStringEncodings(t *testing.T) {
	for _, scheme := range []string{SchemeGrowthBook, SchemeUnleash} {
		e8 := Experiment{Name: "e", Hash: scheme, Variants: variants("v", 1, 1, 1, 1, 1, 1, 1, 1)}
		e8.StringEncoding = EncodingUTF8
		e16 := e8
		e16.StringEncoding = EncodingUTF16
		a, b := mustNew(t, oneLayer("l", e8)), mustNew(t, oneLayer("l", e16))
		differ := 0
		for n := range 200 {
			ascii := []byte(fmt.Sprintf("user-%d", n))
			if fmt.Sprint(a.Assign(ascii, nil)) != fmt.Sprint(b.Assign(ascii, nil)) {
				t.Fatalf("%s: ASCII key %s assigned differently in utf8 and utf16", scheme, ascii)
			}
			other := []byte(fmt.Sprintf("usér-%d-😊", n))
			if fmt.Sprint(a.Assign(other, nil)) != fmt.Sprint(b.Assign(other, nil)) {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: the encoding changed no non-ASCII key's variant of 200", scheme)
		}
	}
}

// TestVendorSharesMatchAssignments checks that the shares Experiments
// reports, which the SRM check tests the counts against, are those the
// vendor hashes deliver: the key counts of 200,000 keys per experiment
// pass CheckSRM. The GrowthBook experiment's weights do not sum to 1, so
// it splits equally; its coverage leaves a third of the keys out.
func TestVendorSharesMatchAssignments(t *testing.T) {
	gb := Experiment{Name: "gb", Hash: SchemeGrowthBook, Variants: variants("gb", 0.7, 0.6, 0.2)}
	gb.Coverage = f64(0.67)
	layers := append(vendorLayers(), Layer{Name: "gb-equal", Experiments: []Experiment{gb}})
	s := mustNew(t, layers)
	counts := map[string][]uint64{}
	index := map[string]map[string]int{}
	for _, e := range s.Experiments() {
		counts[e.Experiment] = make([]uint64, len(e.Variants))
		index[e.Experiment] = map[string]int{}
		for k, v := range e.Variants {
			index[e.Experiment][v.Name] = k
		}
	}
	var buf []byte
	dst := make([]Assignment, 0, len(layers))
	for n := range 200_000 {
		buf = keyN(buf, n)
		for _, a := range s.Assign(buf, dst[:0]) {
			counts[a.Experiment][index[a.Experiment][a.Variant]]++
		}
	}
	for _, e := range s.Experiments() {
		shares := make([]float64, len(e.Variants))
		for k, v := range e.Variants {
			shares[k] = v.Share
		}
		r := CheckSRM(counts[e.Experiment], shares)
		t.Logf("%s (%s): counts %v, shares %.4f, p %.3f", e.Experiment, e.Scheme, counts[e.Experiment], shares, r.P)
		if !r.Checked || r.Mismatch {
			t.Errorf("%s: counts %v against shares %v: %+v", e.Experiment, counts[e.Experiment], shares, r)
		}
	}
}

// BenchmarkAssignSchemes is the cost of Assign in one layer of each
// scheme, the throttler scheme being the reference, on UUID-sized keys.
func BenchmarkAssignSchemes(b *testing.B) {
	layers := append([]Layer{{Name: "throttler", Experiments: []Experiment{
		{Name: "t", Allocation: 100, Variants: variants("t", 1, 1)},
	}}}, vendorLayers()...)
	keys := benchKeys()
	for _, l := range layers {
		s := mustNew(b, []Layer{l})
		scheme := s.layers[0].scheme
		b.Run(scheme, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Assignment, 0, 1)
			i := 0
			for b.Loop() {
				dst = s.Assign(keys[i&1023], dst[:0])
				i++
			}
		})
	}
}
