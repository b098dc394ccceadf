package splitter

import (
	"math"
	"math/rand/v2"
	"testing"
)

func closeTo(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// TestChiSquareSurvivalClosedForms compares with the closed forms for
// df = 1 (erfc), 2 (exp) and 4, on both sides of the switch between
// series and continued fraction (x/2 = df/2 + 1), deep into the tail.
func TestChiSquareSurvivalClosedForms(t *testing.T) {
	forms := []struct {
		df   float64
		want func(x float64) float64
	}{
		{1, func(x float64) float64 { return math.Erfc(math.Sqrt(x / 2)) }},
		{2, func(x float64) float64 { return math.Exp(-x / 2) }},
		{4, func(x float64) float64 { return math.Exp(-x/2) * (1 + x/2) }},
	}
	for _, f := range forms {
		for _, x := range []float64{1e-6, 0.01, 0.5, 1, 2, 2.999, 3, 3.001, 5.99, 6, 6.01, 10, 30, 100, 500, 1200} {
			got, want := chiSquareSurvival(x, f.df), f.want(x)
			if !closeTo(got, want, 1e-9) {
				t.Errorf("df %v, x %v: p = %.17g, want %.17g", f.df, x, got, want)
			}
		}
	}
}

func TestChiSquareSurvivalTable(t *testing.T) {
	for _, tc := range []struct {
		x, df, p, rel float64
	}{
		// Critical values of the chi-square distribution.
		{3.841459, 1, 0.05, 1e-5},
		{6.634897, 1, 0.01, 1e-5},
		{10.827566, 1, 0.001, 1e-5},
		{5.991465, 2, 0.05, 1e-5},
		{13.815511, 2, 0.001, 1e-5},
		{16.266236, 3, 0.001, 1e-5},
		{18.307038, 10, 0.05, 1e-5},
		{29.588298, 10, 0.001, 1e-5},
		// The rounded values of textbook tables.
		{3.84, 1, 0.05, 0.01},
		{10.83, 1, 0.001, 0.01},
		{13.82, 2, 0.001, 0.01},
		{0, 3, 1, 0},
	} {
		if got := chiSquareSurvival(tc.x, tc.df); !closeTo(got, tc.p, tc.rel) {
			t.Errorf("chi2 %v, df %v: p = %.8g, want %v", tc.x, tc.df, got, tc.p)
		}
	}
}

// TestGammaSeriesAndFractionAgree checks the two expansions against each
// other where both converge (gammaQ uses the fraction from x = a+1 on).
func TestGammaSeriesAndFractionAgree(t *testing.T) {
	for _, a := range []float64{0.5, 1, 2.5, 10, 49.5, 200} {
		for _, x := range []float64{a + 1, 1.5*a + 2, 2*a + 5} {
			s, f := 1-gammaPSeries(a, x), gammaQFraction(a, x)
			if math.Abs(s-f) > 1e-12 {
				t.Errorf("Q(%v, %v): series %.17g, fraction %.17g", a, x, s, f)
			}
		}
	}
	if q := gammaQ(2, -1); !math.IsNaN(q) {
		t.Errorf("Q(2, -1) = %v, want NaN", q)
	}
	if q := gammaQ(2, math.Inf(1)); q != 0 {
		t.Errorf("Q(2, +Inf) = %v, want 0", q)
	}
}

func TestSRMFlagsSkewedSplit(t *testing.T) {
	// 50/50 weights, 100,000 keys: (600² + 600²)/50,000 = 14.4, p ≈ 0.00015.
	chi2, p := SRM([]uint64{50_600, 49_400}, []float64{50, 50})
	if !closeTo(chi2, 14.4, 1e-12) || p >= 0.001 || !closeTo(p, math.Erfc(math.Sqrt(7.2)), 1e-9) {
		t.Errorf("skewed split: chi2 %v, p %v; want 14.4 and p < 0.001", chi2, p)
	}
	// 500 off is suspicious (chi2 10, p ≈ 0.0016) but not below 0.001.
	if _, p := SRM([]uint64{50_500, 49_500}, []float64{1, 1}); p < 0.001 || p > 0.002 {
		t.Errorf("50,500 vs 49,500: p %v, want about 0.0016", p)
	}
	// Weights are relative.
	c1, p1 := SRM([]uint64{210, 290, 500}, []float64{2, 3, 5})
	c2, p2 := SRM([]uint64{210, 290, 500}, []float64{20, 30, 50})
	if !closeTo(c1, c2, 1e-12) || !closeTo(p1, p2, 1e-12) {
		t.Errorf("weights 2/3/5: %v, %v; weights 20/30/50: %v, %v", c1, p1, c2, p2)
	}
}

func TestSRMPassesFairSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 9))
	for _, weights := range [][]float64{{50, 50}, {20, 30, 50}, {1, 1, 1, 1, 96}} {
		var total float64
		for _, w := range weights {
			total += w
		}
		counts := make([]uint64, len(weights))
		for range 100_000 {
			u := r.Float64() * total
			i := 0
			for i < len(weights)-1 && u >= weights[i] {
				u -= weights[i]
				i++
			}
			counts[i]++
		}
		chi2, p := SRM(counts, weights)
		t.Logf("weights %v: counts %v, chi2 %.3f, p %.3f", weights, counts, chi2, p)
		if p < 0.001 {
			t.Errorf("weights %v: fair counts %v flagged, p %v", weights, counts, p)
		}
	}
}

func TestSRMEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		observed []uint64
		weights  []float64
	}{
		{nil, nil},
		{[]uint64{10}, []float64{1}},
		{[]uint64{0, 0}, []float64{1, 1}},
	} {
		if chi2, p := SRM(tc.observed, tc.weights); chi2 != 0 || p != 1 {
			t.Errorf("SRM(%v, %v) = %v, %v; want 0, 1", tc.observed, tc.weights, chi2, p)
		}
	}
	for _, tc := range []struct {
		observed []uint64
		weights  []float64
	}{
		{[]uint64{1, 2}, []float64{1}},
		{[]uint64{1, 2}, []float64{1, 0}},
		{[]uint64{1, 2}, []float64{1, math.NaN()}},
		{[]uint64{1, 2}, []float64{1, math.Inf(1)}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SRM(%v, %v) did not panic", tc.observed, tc.weights)
				}
			}()
			SRM(tc.observed, tc.weights)
		}()
	}
}
