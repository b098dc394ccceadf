package splitter

import "math"

// SRM tests observed counts against the split the weights call for: a
// sample-ratio-mismatch check. It returns Pearson's chi-square statistic,
// the sum over categories of (observed-expected)²/expected where expected
// is the total count shared in proportion to the weights, and its p-value
// under the chi-square distribution with len(observed)-1 degrees of
// freedom: the probability of a split at least this uneven if the counts
// did follow the weights.
//
// A p-value below 0.001 is the usual alarm: the assignment or the
// delivery of one variant is broken (events lost, duplicated or filtered
// unevenly), and the experiment's results should not be trusted. Counts
// must be of independent units, for example of keys first assigned in a
// period rather than of events (one key's events all go to one variant).
//
// With fewer than two categories or no observations SRM returns 0, 1.
// It panics if the slices differ in length or if a weight is not positive
// and finite, as the weights come from a validated configuration.
func SRM(observed []uint64, weights []float64) (chi2, pValue float64) {
	if len(observed) != len(weights) {
		panic("splitter: SRM: observed and weights differ in length")
	}
	var n, w float64
	for i := range observed {
		if !(weights[i] > 0) || math.IsInf(weights[i], 0) {
			panic("splitter: SRM: weights must be positive and finite")
		}
		n += float64(observed[i])
		w += weights[i]
	}
	if len(observed) < 2 || n == 0 {
		return 0, 1
	}
	for i, o := range observed {
		e := n * weights[i] / w
		d := float64(o) - e
		chi2 += d * d / e
	}
	return chi2, chiSquareSurvival(chi2, float64(len(observed)-1))
}

// chiSquareSurvival is P(X >= x) for X chi-square distributed with df
// degrees of freedom: Q(df/2, x/2), Q the regularized upper incomplete
// gamma function.
func chiSquareSurvival(x, df float64) float64 {
	return gammaQ(df/2, x/2)
}

const (
	gammaEpsilon  = 1e-15 // relative accuracy of the series and fraction
	gammaTiny     = 1e-300
	gammaMaxSteps = 10_000
)

// gammaQ is the regularized upper incomplete gamma function
// Q(a, x) = Γ(a, x)/Γ(a) = 1 - P(a, x), for a > 0 and x >= 0.
//
// For x < a+1 it sums the power series of P, which converges fast there;
// beyond, it evaluates the continued fraction of Q, which converges fast
// there and keeps the precision of small tail probabilities.
func gammaQ(a, x float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(x) || a <= 0 || x < 0:
		return math.NaN()
	case x == 0:
		return 1
	case math.IsInf(x, 1):
		return 0
	case x < a+1:
		return 1 - gammaPSeries(a, x)
	default:
		return gammaQFraction(a, x)
	}
}

// gammaPrefix is x^a e^-x / Γ(a), computed in logarithms.
func gammaPrefix(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return math.Exp(a*math.Log(x) - x - lg)
}

// gammaPSeries is the regularized lower incomplete gamma function P(a, x)
// from its series
//
//	P(a, x) = x^a e^-x / Γ(a) · Σ_{n≥0} x^n / (a (a+1) … (a+n)).
func gammaPSeries(a, x float64) float64 {
	term := 1 / a
	sum := term
	for n := 1; n < gammaMaxSteps; n++ {
		term *= x / (a + float64(n))
		sum += term
		if math.Abs(term) < math.Abs(sum)*gammaEpsilon {
			break
		}
	}
	return sum * gammaPrefix(a, x)
}

// gammaQFraction is Q(a, x) from the continued fraction
//
//	Γ(a, x) = x^a e^-x · 1/(x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - …)))
//
// evaluated front to back with the modified Lentz method: for a fraction
// b0 + a1/(b1 + a2/(b2 + …)) it tracks the ratios C_n = f_n/f_(n-1) and
// D_n = g_(n-1)/g_n of successive numerators and denominators of the
// convergents, C_n = b_n + a_n/C_(n-1) and D_n = 1/(b_n + a_n D_(n-1)),
// and multiplies the convergent by C_n D_n until that factor is 1. Zero
// denominators are nudged to a tiny number.
func gammaQFraction(a, x float64) float64 {
	// The fraction 1/(b1 + a2/(b2 + …)) with b_n = x + 2n - 1 - a and
	// a_(n+1) = -n(n-a); start from f = 1/b1.
	b := x + 1 - a
	c := 1 / gammaTiny
	d := 1 / b
	f := d
	for n := 1; n < gammaMaxSteps; n++ {
		an := -float64(n) * (float64(n) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < gammaTiny {
			d = gammaTiny
		}
		c = b + an/c
		if math.Abs(c) < gammaTiny {
			c = gammaTiny
		}
		d = 1 / d
		delta := c * d
		f *= delta
		if math.Abs(delta-1) < gammaEpsilon {
			break
		}
	}
	return f * gammaPrefix(a, x)
}
