package flow

import "math"

// conversion estimates, for a reward budget, the conversion ratio c
// (rewards per pass) and the reward delay d from the cluster's cumulative
// passes P(t) and rewards R(t), by least squares on R(t) ≈ c·P(t−d) over a
// grid of delays. Seed 000 smooths Reward/Passed over recent intervals,
// which is biased while rewards are in flight (it under-counts conversions
// by the share of passes not yet converted, and so overspends); fitting the
// delay removes that bias and tells how many rewards are still to come.
type conversion struct {
	t    []int64   // sample instants, ascending
	p, r []float64 // cumulative passes and rewards at those instants
	keep int       // samples kept
	// fromStart: the history begins at the budget's start with no passes,
	// so passes before the first sample are known to be zero.
	fromStart bool

	ratio float64 // current estimate of c (0 while unknown)
	delay int64   // current estimate of d in nanoseconds
}

const (
	minRewardsToFit = 10
	delaySteps      = 80
)

func newConversion(keep int) *conversion {
	return &conversion{keep: keep}
}

// add records a sample; instants must not go backwards.
func (c *conversion) add(t int64, passed, rewards float64) {
	n := len(c.t)
	if n > 0 && t <= c.t[n-1] {
		c.p[n-1], c.r[n-1] = passed, rewards
		return
	}
	if n == 0 {
		c.fromStart = passed == 0
	}
	if n == c.keep {
		copy(c.t, c.t[1:])
		copy(c.p, c.p[1:])
		copy(c.r, c.r[1:])
		c.t, c.p, c.r = c.t[:n-1], c.p[:n-1], c.r[:n-1]
		c.fromStart = false
	}
	c.t = append(c.t, t)
	c.p = append(c.p, passed)
	c.r = append(c.r, rewards)
}

// cursor interpolates cumulative passes at ascending instants in O(1)
// amortized time per call.
type cursor struct {
	c *conversion
	i int
}

func (k *cursor) at(t int64) (float64, bool) {
	c := k.c
	n := len(c.t)
	if n == 0 {
		return 0, false
	}
	if t < c.t[0] {
		return 0, c.fromStart
	}
	for k.i+1 < n && c.t[k.i+1] <= t {
		k.i++
	}
	if k.i+1 >= n {
		return c.p[n-1], true
	}
	lo, hi := k.i, k.i+1
	f := float64(t-c.t[lo]) / float64(c.t[hi]-c.t[lo])
	return c.p[lo] + f*(c.p[hi]-c.p[lo]), true
}

// passedAt interpolates the cumulative passes at instant t.
func (c *conversion) passedAt(t int64) float64 {
	k := cursor{c: c}
	v, _ := k.at(t)
	return v
}

// fit re-estimates ratio and delay; maxDelay bounds the delay searched:
// a coarse grid over [0, maxDelay], then a fine one around the best point.
func (c *conversion) fit(maxDelay int64) {
	n := len(c.t)
	if n < 3 || c.r[n-1] < minRewardsToFit {
		return
	}
	if span := c.t[n-1] - c.t[0]; maxDelay > span {
		maxDelay = span
	}
	step := max(maxDelay/delaySteps, 1)
	k, d, e := c.search(0, maxDelay, step)
	if fine := max(step/16, 1); fine < step {
		if k2, d2, e2 := c.search(max(d-step, 0), min(d+step, maxDelay), fine); e2 <= e {
			k, d = k2, d2
		}
	}
	if k > 0 {
		c.ratio, c.delay = k, d
	}
}

// search returns the best ratio, delay and error for delays from lo to hi
// in steps.
//
// For each delay, on increments, whose noise is independent from one
// sample to the next (cumulative series carry a random walk that a fit
// would explain away with a wrong delay): the ratio is the rewards over
// the passes a delay earlier (the maximum likelihood of counts that are
// Poisson), and the error Pearson's chi-square per increment, each
// squared residual over the rewards expected (at least half the mean).
// Plain least squares let a burst of passes not yet rewarded pull the
// delay short: its large increments outweigh the rest, and the rewards
// that such a delay should already have brought, but did not, cost
// little.
func (c *conversion) search(lo, hi, step int64) (bestK float64, bestD int64, bestErr float64) {
	bestErr = math.Inf(1)
	for d := lo; d <= hi; d += step {
		sx, sy, used := c.sums(d)
		if !(sx > 0) || sy <= 0 || used < 3 {
			continue
		}
		k := sy / sx
		floor := k * sx / float64(used) / 2
		var chi float64
		c.increments(d, func(dx, dy float64) {
			r := dy - k*dx
			chi += r * r / max(k*dx, floor)
		})
		if e := chi / float64(used); e < bestErr {
			bestErr, bestK, bestD = e, k, d
		}
	}
	return bestK, bestD, bestErr
}

// sums returns the sums of the increments of passes a delay d earlier and
// of rewards, and how many increments there are.
func (c *conversion) sums(d int64) (sx, sy float64, used int) {
	c.increments(d, func(dx, dy float64) {
		sx += dx
		sy += dy
		used++
	})
	return sx, sy, used
}

// increments calls f with each increment of the passes a delay d earlier
// and the matching increment of the rewards, where both are known.
func (c *conversion) increments(d int64, f func(dx, dy float64)) {
	cur := cursor{c: c}
	prevX, prevOK := cur.at(c.t[0] - d)
	for i := 1; i < len(c.t); i++ {
		x, ok := cur.at(c.t[i] - d)
		if ok && prevOK {
			f(x-prevX, c.r[i]-c.r[i-1])
		}
		prevX, prevOK = x, ok
	}
}

// priorWeight is how many rewards a prior conversion ratio and delay
// weigh against those the fit has seen.
const priorWeight = 20

// weight is how many rewards the fit has seen.
func (c *conversion) weight() float64 {
	if len(c.r) == 0 {
		return 0
	}
	return c.r[len(c.r)-1] - c.r[0]
}

// converts returns the conversion ratio and the reward delay to pace by
// at t: the fit, blended with the budget's prior while it has seen few
// rewards (or, without a prior, with the uninformed ratio, see blind,
// weighing as much as the rewards a fit needs); before any fit, the prior,
// or else what fresh peers have fitted; 0, 0 when nothing is known.
func (c *Controller) converts(t int64, e *estimate) (conv float64, delay int64) {
	pc, pd := c.b.Conversion, int64(c.b.RewardDelay)
	m := c.conv
	switch {
	case m.ratio > 0 && pc > 0:
		return m.blend(pc, pd, priorWeight)
	case m.ratio > 0:
		return m.blend(c.blind(t, e), m.delay, minRewardsToFit)
	case pc > 0:
		return pc, pd
	}
	return c.peersConversion(t)
}

// blend returns the fit's ratio and delay averaged with conv and delay
// weighing as much as w rewards.
func (m *conversion) blend(conv float64, delay int64, w float64) (float64, int64) {
	n := m.weight()
	return (n*m.ratio + w*conv) / (n + w), int64((n*float64(m.delay) + w*float64(delay)) / (n + w))
}

// blind returns the conversion ratio a reward budget paces by while
// nothing tells it (no fit, no prior, no peer's fit), uninformed: of the
// ratios at which the budget can be met at all, from the one at which the
// cluster's whole traffic over the period brings the target (cmin) to one
// reward per pass, the middle on a log scale, sqrt(cmin), as no scale is
// more likely than another. Passes made more than MaxRewardDelay ago have
// had time to convert: it is lowered to what they show, (rewards+1) /
// those passes, when that is less.
func (c *Controller) blind(t int64, e *estimate) float64 {
	conv := 1.0
	if offered := e.rate * c.span(e); offered > c.b.Target {
		conv = math.Sqrt(c.b.Target / offered)
	}
	if old := c.conv.passedAt(t - int64(c.cfg.maxDelay)); old >= 1 {
		conv = min(conv, (e.totalRewards+1)/old)
	}
	return conv
}

// peersConversion averages the conversion ratio and delay that fresh
// peers' nodes have fitted (zero when none has).
func (c *Controller) peersConversion(t int64) (conv float64, delay int64) {
	n := 0
	var sumC, sumD float64
	for _, p := range c.peerList {
		if t-p.at <= c.stale() && p.rep.Conversion > 0 {
			sumC += p.rep.Conversion
			sumD += float64(p.rep.RewardDelay)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sumC / float64(n), int64(sumD / float64(n))
}
