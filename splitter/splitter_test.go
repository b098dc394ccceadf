package splitter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

func mustNew(tb testing.TB, layers []Layer) *Splitter {
	tb.Helper()
	s, err := New(layers)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

// keyN is the n-th key of the fixed key set the statistical tests use.
func keyN(buf []byte, n int) []byte {
	return strconv.AppendInt(append(buf[:0], "user-"...), int64(n), 10)
}

func variants(topicPrefix string, weights ...float64) []Variant {
	vs := make([]Variant, len(weights))
	for i, w := range weights {
		vs[i] = Variant{Name: "v" + itoa(i), Weight: w, Topic: topicPrefix + "-v" + itoa(i)}
	}
	return vs
}

func oneLayer(name string, es ...Experiment) []Layer {
	return []Layer{{Name: name, Experiments: es}}
}

func TestDeterminism(t *testing.T) {
	cfg := []Layer{
		{Name: "ranking", Experiments: []Experiment{
			{Name: "new-ranker", Allocation: 30, Variants: variants("rank", 1, 1)},
			{Name: "old-ranker", Start: 40, Allocation: 20, Variants: variants("old", 1, 2, 3)},
		}},
		{Name: "ui", Salt: "ui-2026", Experiments: []Experiment{
			{Name: "blue-button", Allocation: 50, Start: 50, Variants: variants("blue", 5, 5)},
		}},
	}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	var buf []byte
	prefix := []Assignment{{Layer: "already there"}}
	for n := range 20_000 {
		buf = keyN(buf, n)
		x := a.Assign(buf, nil)
		y := b.Assign(buf, nil)
		z := a.Assign(buf, append([]Assignment(nil), prefix...))
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Fatalf("key %s: two splitters of one config disagree: %v, %v", buf, x, y)
		}
		if z[0] != prefix[0] || fmt.Sprint(z[1:]) != fmt.Sprint(x) {
			t.Fatalf("key %s: Assign onto a non-empty dst = %v, want %v then %v", buf, z, prefix, x)
		}
	}
}

// TestExperimentRangeEdges checks the bucket range [start, end) at its
// edges, with experiments declared out of order.
func TestExperimentRangeEdges(t *testing.T) {
	s := mustNew(t, oneLayer("edges",
		Experiment{Name: "b", Start: 50, Allocation: 10, Variants: variants("b", 1)},
		Experiment{Name: "a", Start: 20, Allocation: 10, Variants: variants("a", 1)},
		Experiment{Name: "c", Start: 60, Allocation: 0.01, Variants: variants("c", 1)},
	))
	want := map[int]string{1999: "", 2000: "a", 2999: "a", 3000: "", 4999: "", 5000: "b",
		5999: "b", 6000: "c", 6001: ""}
	found := map[int]bool{}
	seed := layerSeed("edges")
	var buf []byte
	for n := 0; len(found) < len(want) && n < 10_000_000; n++ {
		buf = keyN(buf, n)
		b := bucketOf(buf, seed)
		exp, ok := want[b]
		if !ok || found[b] {
			continue
		}
		found[b] = true
		var got string
		if as := s.Assign(buf, nil); len(as) == 1 {
			got = as[0].Experiment
			if as[0].Bucket != float64(b) {
				t.Errorf("key %s: Bucket = %v, want %d", buf, as[0].Bucket, b)
			}
		}
		if got != exp {
			t.Errorf("bucket %d: experiment %q, want %q", b, got, exp)
		}
	}
	if len(found) != len(want) {
		t.Fatalf("found keys for %d of %d edge buckets", len(found), len(want))
	}
}

func TestMutualExclusion(t *testing.T) {
	es := []Experiment{
		{Name: "e0", Start: 0, Allocation: 10, Variants: variants("e0", 1, 1)},
		{Name: "e1", Start: 10, Allocation: 25, Variants: variants("e1", 1, 2)},
		{Name: "e2", Start: 40, Allocation: 30, Variants: variants("e2", 3, 1)},
		{Name: "e3", Start: 75, Allocation: 20, Variants: variants("e3", 1)},
	}
	all := mustNew(t, oneLayer("excl", es...))
	// One splitter per experiment alone in the layer (same salt): the
	// experiments are exclusive if no key is in two of them, whatever the
	// full splitter does.
	alone := make([]*Splitter, len(es))
	for i, e := range es {
		alone[i] = mustNew(t, oneLayer("excl", e))
	}
	const n = 200_000
	counts := make([]int, len(es))
	var buf []byte
	var dst [4]Assignment
	for k := range n {
		buf = keyN(buf, k)
		got := all.Assign(buf, dst[:0])
		if len(got) > 1 {
			t.Fatalf("key %s: %d assignments in one layer", buf, len(got))
		}
		in := -1
		for i, s := range alone {
			as := s.Assign(buf, dst[1:1])
			if len(as) == 0 {
				continue
			}
			if in >= 0 {
				t.Fatalf("key %s: in experiments %s and %s of one layer", buf, es[in].Name, es[i].Name)
			}
			in = i
			if len(got) != 1 || got[0] != as[0] {
				t.Fatalf("key %s: full splitter says %v, experiment alone says %v", buf, got, as)
			}
		}
		if in < 0 && len(got) != 0 {
			t.Fatalf("key %s: assigned %v but in no experiment alone", buf, got)
		}
		if in >= 0 {
			counts[in]++
		}
	}
	for i, e := range es {
		if share := float64(counts[i]) / n; math.Abs(share-e.Allocation/100) > 0.01 {
			t.Errorf("%s: %.4f of keys, allocation %v%%", e.Name, share, e.Allocation)
		}
	}
}

func TestIndependenceAcrossLayers(t *testing.T) {
	s := mustNew(t, []Layer{
		{Name: "one", Experiments: []Experiment{{Name: "A", Allocation: 30, Variants: variants("a", 1)}}},
		{Name: "two", Experiments: []Experiment{{Name: "B", Start: 50, Allocation: 40, Variants: variants("b", 1)}}},
		// Same experiment name and range as layer one, other salt.
		{Name: "three", Experiments: []Experiment{{Name: "A", Allocation: 30, Variants: variants("c", 1)}}},
	})
	const n = 200_000
	var inA, inB, inAB, inA3, inAA3 int
	var buf []byte
	var dst [3]Assignment
	for k := range n {
		buf = keyN(buf, k)
		var a, b, a3 bool
		for _, as := range s.Assign(buf, dst[:0]) {
			switch as.Layer {
			case "one":
				a = true
			case "two":
				b = true
			case "three":
				a3 = true
			}
		}
		inA += b2i(a)
		inB += b2i(b)
		inA3 += b2i(a3)
		inAB += b2i(a && b)
		inAA3 += b2i(a && a3)
	}
	check := func(name string, both, x, y int) {
		t.Helper()
		p := float64(x) / n * float64(y) / n // product of the marginals
		se := math.Sqrt(p * (1 - p) / n)
		got := float64(both) / n
		t.Logf("%s: P(both) = %.5f, product of marginals %.5f, %.1f standard errors", name, got, p, (got-p)/se)
		if math.Abs(got-p) > 5*se {
			t.Errorf("%s: P(both) = %.5f, want %.5f ± %.5f (5 standard errors)", name, got, p, 5*se)
		}
	}
	check("A of layer one and B of layer two", inAB, inA, inB)
	check("A of layer one and A of layer three", inAA3, inA, inA3)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestVariantShares(t *testing.T) {
	for _, tc := range []struct {
		name    string
		alloc   float64
		keys    int
		weights []float64
	}{
		{"whole layer 10/30/60", 100, 200_000, []float64{10, 30, 60}},
		{"quarter of the layer 50/50", 25, 440_000, []float64{1, 1}},
		{"five arms", 60, 200_000, []float64{0.2, 0.2, 0.2, 0.2, 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, oneLayer("shares", Experiment{Name: "e", Start: 100 - tc.alloc,
				Allocation: tc.alloc, Variants: variants("t", tc.weights...)}))
			counts := make([]uint64, len(tc.weights))
			in := 0
			var buf []byte
			var dst [1]Assignment
			for k := range tc.keys {
				buf = keyN(buf, k)
				for _, as := range s.Assign(buf, dst[:0]) {
					i, _ := strconv.Atoi(as.Variant[1:])
					counts[i]++
					in++
				}
			}
			if in < 100_000 {
				t.Fatalf("only %d keys in the experiment", in)
			}
			var total float64
			for _, w := range tc.weights {
				total += w
			}
			for i, w := range tc.weights {
				share := float64(counts[i]) / float64(in)
				if math.Abs(share-w/total) > 0.01 {
					t.Errorf("variant %d: share %.4f, weight share %.4f", i, share, w/total)
				}
			}
			chi2, p := SRM(counts, tc.weights)
			t.Logf("%d keys in the experiment, counts %v, chi2 %.3f, p %.3f", in, counts, chi2, p)
			if p < 0.001 {
				t.Errorf("a fair split is flagged: counts %v, chi2 %.3f, p %.6f", counts, chi2, p)
			}
		})
	}
}

// TestRaiseAllocationKeepsAssignments is the property that makes
// allocations safe to grow: for every allocation a and every a' > a, a key
// in the experiment at a is in the same experiment and variant at a'; and
// the other experiments of the layer do not change.
func TestRaiseAllocationKeepsAssignments(t *testing.T) {
	allocs := []float64{0.01, 1, 5, 10, 12.34, 20, 33.33, 50}
	layers := func(alloc float64) []Layer {
		return []Layer{{Name: "growth", Experiments: []Experiment{
			{Name: "before", Start: 0, Allocation: 10, Variants: variants("before", 1, 1)},
			{Name: "grow", Start: 10, Allocation: alloc, Variants: variants("grow", 20, 30, 50)},
			{Name: "after", Start: 60, Allocation: 20, Variants: variants("after", 1, 3)},
		}}}
	}
	ss := make([]*Splitter, len(allocs))
	for i, a := range allocs {
		ss[i] = mustNew(t, layers(a))
	}
	const n = 100_000
	counts := make([]int, len(allocs))
	var buf []byte
	got := make([]Assignment, len(allocs)) // zero when in no experiment
	var dst [1]Assignment
	for k := range n {
		buf = keyN(buf, k)
		for i, s := range ss {
			got[i] = Assignment{}
			if as := s.Assign(buf, dst[:0]); len(as) == 1 {
				got[i] = as[0]
			}
			if got[i].Experiment == "grow" {
				counts[i]++
			}
		}
		for i := range allocs {
			for j := i + 1; j < len(allocs); j++ {
				x, y := got[i], got[j]
				if x.Experiment == "grow" && x != y {
					t.Fatalf("key %s: %v at allocation %v%%, %v at %v%%", buf, x, allocs[i], y, allocs[j])
				}
				if x.Experiment != "grow" && y.Experiment != "grow" && x != y {
					t.Fatalf("key %s: a neighbour moved: %v at allocation %v%%, %v at %v%%", buf, x, allocs[i], y, allocs[j])
				}
			}
		}
	}
	for i, a := range allocs {
		if share := float64(counts[i]) / n; math.Abs(share-a/100) > 0.01 {
			t.Errorf("allocation %v%%: %.4f of keys", a, share)
		}
	}
	t.Logf("keys in the growing experiment per allocation %v: %v", allocs, counts)

	// Growing into the neighbour is refused, not resolved by moving keys.
	_, err := New(layers(50.01))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "layers[0].experiments[2]" {
		t.Fatalf("growing into a neighbour: err = %v, want one overlap problem on experiments[2]", err)
	}
}

func TestConcurrentAssign(t *testing.T) {
	s := mustNew(t, []Layer{
		{Name: "a", Experiments: []Experiment{{Name: "x", Allocation: 40, Variants: variants("x", 1, 1)}}},
		{Name: "b", Experiments: []Experiment{{Name: "y", Allocation: 70, Variants: variants("y", 1, 2)}}},
	})
	const n = 5_000
	want := make([][]Assignment, n)
	var buf []byte
	for k := range n {
		buf = keyN(buf, k)
		want[k] = s.Assign(buf, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			var buf []byte
			dst := make([]Assignment, 0, 2)
			for i := range n {
				k := (i + g*n/4) % n
				buf = keyN(buf, k)
				if got := s.Assign(buf, dst[:0]); fmt.Sprint(got) != fmt.Sprint(want[k]) {
					errs <- fmt.Sprintf("goroutine %d, key %s: %v, want %v", g, buf, got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestAssignDoesNotAllocate(t *testing.T) {
	cfg := []Layer{
		{Name: "a", Experiments: []Experiment{{Name: "x", Allocation: 100, Variants: variants("x", 1, 1)}}},
		{Name: "b", Experiments: []Experiment{{Name: "y", Allocation: 100, Variants: variants("y", 1, 2)}}},
	}
	s := mustNew(t, cfg)
	key := []byte("user-42")
	dst := make([]Assignment, 0, 2)
	var as []Assignment
	if allocs := testing.AllocsPerRun(1000, func() { as = s.Assign(key, dst[:0]) }); allocs != 0 {
		t.Errorf("Assign allocates %v times per call", allocs)
	}
	// The strings are the configuration's own.
	if len(as) != 2 {
		t.Fatalf("got %d assignments, want 2", len(as))
	}
	for i, a := range as {
		v, _ := strconv.Atoi(a.Variant[1:])
		if unsafe.StringData(a.Topic) != unsafe.StringData(cfg[i].Experiments[0].Variants[v].Topic) ||
			unsafe.StringData(a.Layer) != unsafe.StringData(cfg[i].Name) {
			t.Errorf("assignment %d: strings are copies of the configuration's", i)
		}
	}
}

func TestZeroSplitterAndNoLayers(t *testing.T) {
	var zero Splitter
	if got := zero.Assign([]byte("k"), nil); got != nil {
		t.Errorf("zero Splitter: Assign = %v, want nil", got)
	}
	s, err := New(nil)
	if err != nil {
		t.Fatalf("New(nil): %v", err)
	}
	dst := []Assignment{{Layer: "x"}}
	if got := s.Assign([]byte("k"), dst); len(got) != 1 {
		t.Errorf("no layers: Assign = %v, want dst unchanged", got)
	}
}

func TestRoute(t *testing.T) {
	s := mustNew(t, []Layer{
		{Name: "first", Experiments: []Experiment{{Name: "x", Allocation: 50, Variants: variants("first", 1)}}},
		{Name: "second", Experiments: []Experiment{{Name: "y", Allocation: 50, Variants: variants("second", 1)}}},
	})
	seen := map[string]int{}
	var buf []byte
	for k := range 10_000 {
		buf = keyN(buf, k)
		as := s.Assign(buf, nil)
		topic, ok := Route(as)
		switch {
		case len(as) == 0:
			if ok || topic != "" {
				t.Fatalf("no assignment: Route = %q, %v", topic, ok)
			}
			seen["output"]++
		case !ok || topic != as[0].Topic:
			t.Fatalf("Route(%v) = %q, %v, want the first assignment's topic", as, topic, ok)
		default:
			seen[topic]++
		}
	}
	// First layer: half the keys; second: half of the remaining half.
	t.Logf("routed: %v", seen)
	if seen["first-v0"] < 4800 || seen["second-v0"] < 2300 || seen["output"] < 2300 {
		t.Errorf("routed %v, want about 5000, 2500 and 2500", seen)
	}
}

func FuzzAssign(f *testing.F) {
	f.Add([]byte("user-42"))
	f.Add([]byte{})
	f.Add([]byte("0123456789012345678901234567890123456789"))
	s := mustNew(f, []Layer{
		{Name: "a", Experiments: []Experiment{
			{Name: "x", Start: 10, Allocation: 30, Variants: variants("x", 1, 1)},
			{Name: "y", Start: 50, Allocation: 30, Variants: variants("y", 1, 9)},
		}},
		{Name: "b", Experiments: []Experiment{{Name: "z", Allocation: 100, Variants: variants("z", 1)}}},
	})
	f.Fuzz(func(t *testing.T, key []byte) {
		as := s.Assign(key, nil)
		if len(as) == 0 || as[len(as)-1].Layer != "b" || len(as) > 2 {
			t.Fatalf("Assign(%q) = %v", key, as)
		}
		for _, a := range as {
			lo, hi := 0, Buckets
			switch a.Experiment {
			case "x":
				lo, hi = 1000, 4000
			case "y":
				lo, hi = 5000, 8000
			}
			if a.Bucket < float64(lo) || a.Bucket >= float64(hi) || a.Topic != a.Experiment+"-"+a.Variant {
				t.Fatalf("Assign(%q) = %v", key, as)
			}
		}
	})
}

func benchLayers(n int) []Layer {
	ls := make([]Layer, n)
	for i := range ls {
		ls[i] = Layer{Name: "layer" + itoa(i), Experiments: []Experiment{
			{Name: "a", Start: 0, Allocation: 20, Variants: variants("a", 1, 1)},
			{Name: "b", Start: 25, Allocation: 20, Variants: variants("b", 1, 1, 1)},
			{Name: "c", Start: 50, Allocation: 40, Variants: variants("c", 90, 10)},
		}}
	}
	return ls
}

func benchKeys() [][]byte {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%012d", i*7919))
	}
	return keys
}

func BenchmarkAssign(b *testing.B) {
	keys := benchKeys()
	for _, layers := range []int{1, 4} {
		s := mustNew(b, benchLayers(layers))
		b.Run("layers="+itoa(layers), func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Assignment, 0, layers)
			i := 0
			for b.Loop() {
				dst = s.Assign(keys[i&1023], dst[:0])
				i++
			}
		})
		b.Run("layers="+itoa(layers)+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]Assignment, 0, layers)
				i := 0
				for pb.Next() {
					dst = s.Assign(keys[i&1023], dst[:0])
					i++
				}
			})
		})
	}
}
