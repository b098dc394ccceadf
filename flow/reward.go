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
	// delayHi: the upper end of the delays that fit about as well as
	// delay (within one standard deviation), delay when it is known well.
	delayHi int64
	// expo: the delays fit an exponential distribution of mean delay
	// better than one fixed delay (see expIncrements).
	expo bool
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
	k, d, e := c.searchFine(false, maxDelay, step)
	// The same grid for an exponential distribution of delays, of mean d
	// (rewards come at random times, most of them early, some late): a
	// fixed delay fitted to such rewards settles near their median, short
	// of their mean, and counts too few in flight.
	if k2, d2, e2 := c.searchFine(true, maxDelay, step); k2 > 0 && e2 < e {
		k, d, e = k2, d2, e2
		c.expo = true
	} else if k > 0 {
		c.expo = false
	}
	if k > 0 {
		c.ratio, c.delay = k, d
		c.delayHi = c.upper(c.expo, d, e, maxDelay, step)
	}
}

// upper returns the longest delay from d up, in steps, whose fit is within
// one standard deviation of the best one, e (Pearson's chi-square per
// increment at d): the total chi-square rises by at most 1 from its least,
// scaled by the overdispersion the best fit shows (e, when over 1).
func (c *conversion) upper(expo bool, d int64, e float64, maxDelay, step int64) int64 {
	hi := d
	for dd := d + step; dd <= maxDelay; dd += step {
		_, e2, used := c.chi(expo, dd)
		if used == 0 || (e2-e)*float64(used) > max(e, 1) {
			break
		}
		hi = dd
	}
	return hi
}

// searchFine searches delays over a coarse grid of step up to maxDelay,
// then a fine one around the best, for one shape (exponential or fixed).
func (c *conversion) searchFine(expo bool, maxDelay, step int64) (k float64, d int64, e float64) {
	k, d, e = c.search(expo, 0, maxDelay, step)
	if fine := max(step/16, 1); fine < step {
		if k2, d2, e2 := c.search(expo, max(d-step, 0), min(d+step, maxDelay), fine); e2 <= e {
			k, d, e = k2, d2, e2
		}
	}
	return k, d, e
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
func (c *conversion) search(expo bool, lo, hi, step int64) (bestK float64, bestD int64, bestErr float64) {
	bestErr = math.Inf(1)
	if expo {
		lo = max(lo, step) // a mean of 0 is the fixed delay 0
	}
	for d := lo; d <= hi; d += step {
		if k, e, used := c.chi(expo, d); used > 0 && e < bestErr {
			bestErr, bestK, bestD = e, k, d
		}
	}
	return bestK, bestD, bestErr
}

// chi returns, for delay d, the ratio and the error of the fit (Pearson's
// chi-square per increment), and the increments it used: none when they
// are too few or show nothing.
func (c *conversion) chi(expo bool, d int64) (k, e float64, used int) {
	sx, sy, used := c.sums(expo, d)
	if !(sx > 0) || sy <= 0 || used < 3 {
		return 0, 0, 0
	}
	k = sy / sx
	floor := k * sx / float64(used) / 2
	var chi float64
	c.each(expo, d, func(dx, dy float64) {
		r := dy - k*dx
		chi += r * r / max(k*dx, floor)
	})
	return k, chi / float64(used), used
}

// sums returns the sums of the increments of passes a delay d earlier and
// of rewards, and how many increments there are.
func (c *conversion) sums(expo bool, d int64) (sx, sy float64, used int) {
	c.each(expo, d, func(dx, dy float64) {
		sx += dx
		sy += dy
		used++
	})
	return sx, sy, used
}

// each is expIncrements for an exponential distribution of mean d, else
// increments.
func (c *conversion) each(expo bool, d int64, f func(dx, dy float64)) {
	if expo {
		c.expIncrements(d, f)
	} else {
		c.increments(d, f)
	}
}

// expIncrements calls f, for each interval between samples, with the
// passes expected to convert in it when delays are exponential with mean
// mu, and the rewards that came in it. Passes are taken as spread evenly
// over their interval. Before the first sample, the passes are none if
// the history starts with the budget, else taken at the first interval's
// rate for long enough to be in a steady state. It returns the passes
// still pending at the last sample; f may be nil.
func (c *conversion) expIncrements(mu int64, f func(dx, dy float64)) (pending float64) {
	if !c.fromStart && len(c.t) > 1 {
		pending = (c.p[1] - c.p[0]) / float64(c.t[1]-c.t[0]) * float64(mu)
	}
	var lastDt, a, stay float64
	for i := 1; i < len(c.t); i++ {
		if dt := float64(c.t[i] - c.t[i-1]); dt != lastDt {
			// a: the share of passes pending at the start of the interval
			// still pending at its end; stay: that of passes made during it.
			lastDt, a = dt, math.Exp(-dt/float64(mu))
			stay = float64(mu) * (1 - a) / dt
		}
		dp := c.p[i] - c.p[i-1]
		if f != nil {
			f(pending*(1-a)+dp*(1-stay), c.r[i]-c.r[i-1])
		}
		pending = pending*a + dp*stay
	}
	return pending
}

// inflight returns how many of the passed passes made by t are still to
// convert, under the fitted shape of delays with delay (or mean) d.
func (c *conversion) inflight(t int64, passed float64, d int64) float64 {
	n := len(c.t)
	if d <= 0 || n == 0 {
		return 0
	}
	if !c.expo {
		return max(passed-c.passedAt(t-d), 0)
	}
	pending := c.expIncrements(d, nil)
	age := float64(max(t-c.t[n-1], 0))
	return max(pending*math.Exp(-age/float64(d))+passed-c.p[n-1], 0)
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
