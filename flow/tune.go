package flow

import (
	"math"
	"time"
)

// progress is what a tune judges the budget's course by.
type progress struct {
	achieved float64 // passes, or rewards plus those still expected
	conv     float64 // rewards per pass (1 for pass budgets)
	lead     int64   // reward delay: how far passes lead their rewards
	// spread: the standard deviation of the rewards still to come from
	// the passes in flight (Poisson counts)
	spread float64
}

// tuneLocked re-computes the working pass rate (and score cut) at t.
func (c *Controller) tuneLocked(t int64, synced bool) {
	e := c.estimate(t)
	if c.b.Delay {
		c.retuneQuota(t, e.period)
	}
	prm := c.bounds(&params{period: e.period, until: t + 2*int64(c.cfg.tune)})
	g := c.progress(t, &e, synced)
	q := c.wanted(t, &e, g, prm)
	c.working(t, &e, g, q, prm)
	c.guard(t, &e, g, q, prm)
	c.restUntil(t, &e, prm)
	c.params.Store(prm)
	c.record(t, &e, g, prm, synced)
	c.slack.Store(c.slackAfter(t, &e, prm))
}

// restEvents is how many events of its own lanes a light budget's visit
// waits for (or StaleAfter; see restUntil).
const restEvents = 20

// restUntil sets the rest of a light budget (c.rest): until then, or until
// its own lanes offered restEvents events since this tune, a round leaves
// it unvisited (Tree.hold), and prm's allowance lasts that span (filling
// past the tune's own span at the node's part of the ideal rate, as any
// allowance does: see allowance).
// A visit every tune interval re-tunes a budget whose own lanes offer a few
// events a second on one event or none, which its estimates cannot tell
// from noise, at the cost of reading the controller, its lanes and its
// peers; the events counted bring a burst's visit forward. A budget rests
// when its own lanes offer fewer than restEvents events a tune interval
// and its pacing needs no prompt visit: an unscored pass budget, not a
// delay budget, measured and past its warm-up, not the one node passing
// for the cluster, not silent, not exhausted, not resuming after a gap,
// and with its rest ending a tune interval before its closing stretch (or
// its period's end). Its lanes pace by the working fraction meanwhile, and
// the allowance bounds what they pass by the node's part of what is left,
// as between any two tunes.
func (c *Controller) restUntil(t int64, e *estimate, prm *params) {
	c.rest.Store(0)
	a := prm.allow
	tune := int64(c.cfg.tune)
	if c.sk != nil || c.conv != nil || c.b.Delay || c.single || prm.cold || prm.silent || prm.exhausted ||
		t < c.warmUntil || a == nil || a.span <= 0 || a.closing || c.resuming(t) ||
		e.ownRate*c.cfg.tune.Seconds() >= restEvents {
		return
	}
	end := e.end - c.sched.reserve - c.closingSpan(e) - tune
	gap := min(int64(c.cfg.staleAfter), end-t)
	if gap <= tune {
		return
	}
	a.longer, a.alive = gap-tune, &c.tree.alive
	prm.rest = t + gap + tune
	c.rest.Store(t + gap)
}

// slackAfter reports whether the tune at t left a budget that its traffic
// cannot exhaust passing every event: an unscored pass budget, not a delay
// budget, measured and past its warm-up (its estimates settled), passing
// at a fraction of 1, whose allowance is free (guard: what is left is more
// than four times what the cluster offers until the end of the period),
// outside its closing stretch. Until the next Sync its parameters stay
// right, and the allowance bounds what its lanes pass by the node's part
// of what is left.
func (c *Controller) slackAfter(t int64, e *estimate, prm *params) bool {
	return c.sk == nil && c.conv == nil && !c.b.Delay && !c.single && !prm.cold && !prm.silent && !prm.exhausted && t >= c.warmUntil &&
		prm.allow != nil && prm.allow.free > 0 && prm.p >= 1 && prm.nextP >= 1 && !c.lastReports(t, e)
}

// progress reads the achieved amount at t; for reward budgets it also
// feeds and fits the conversion model.
func (c *Controller) progress(t int64, e *estimate, synced bool) progress {
	g := progress{achieved: e.passed + e.reserve, conv: 1}
	if c.conv == nil {
		return g
	}
	if !c.tuned && e.totalPassed == 0 {
		c.conv.add(t, 0, 0)
	}
	if synced {
		c.conv.add(t, e.totalPassed, e.totalRewards)
		c.conv.fit(int64(c.cfg.maxDelay))
	}
	if g.conv, g.lead = c.converts(t, e); g.conv == 0 {
		// Nothing known: every pass not yet accounted for by the rewards
		// seen is taken to be in flight, at the uninformed ratio, so that
		// passes follow the ideal curve scaled by it until a fit (or a
		// peer's) tells the ratio and the delay.
		g.conv = c.blind(t, e)
		g.achieved = max(e.rewards, g.conv*e.passed) + g.conv*e.reserve
		return g
	}
	// Rewards still to come from passes made within the delay.
	inflight := c.conv.inflight(t, e.totalPassed, g.lead)
	g.achieved = e.rewards + g.conv*(inflight+e.reserve)
	// Their spread: Poisson counts, and the error of the delay fitted,
	// which scales them (a delay the data tell only loosely, as when
	// passes come at a steady rate, counts too few about one time in
	// six by the gap up to its upper end).
	model := 0.0
	if m := c.conv; m.ratio > 0 && m.delayHi > m.delay && m.delay > 0 {
		hi := int64(float64(g.lead) * float64(m.delayHi) / float64(m.delay))
		model = g.conv * (m.inflight(t, e.totalPassed, hi) - inflight)
	}
	g.spread = math.Sqrt(g.conv*(inflight+e.reserve) + model*model)
	return g
}

// wanted returns the cluster pass rate (per second) that follows the ideal
// curve from here, and marks prm exhausted once the target is reached.
func (c *Controller) wanted(t int64, e *estimate, g progress, prm *params) float64 {
	T := c.b.Target
	endEff := e.end - c.sched.reserve
	// Passes lead the curve they are judged on by the reward delay. Over
	// the last four delays, reward budgets lead by a little more, to be
	// done a little early (a delay at most, and no more than 1.5% of the
	// window ahead of the ideal), then top up from the rewards actually
	// seen, so that fewer rewards are still in flight (and uncertain) when
	// the window closes.
	tt := t + g.lead
	if early := min(g.lead, (endEff-e.start)*3/200); early > 0 {
		ramp := float64(t-(endEff-4*g.lead-early)) / float64(3*g.lead)
		tt += int64(float64(early) * max(0, min(1, ramp)))
	}
	var q float64 // wanted cluster pass rate, per second
	// The hard stop: the target, less the margin of error of the peers'
	// passes estimated since their reports (none once one node at a time
	// passes; see guard.go). Stale peers are counted in achieved.
	// The margin is at most half a percent of the target: a guard against
	// the errors of a few estimates, not a second budget. A reward
	// budget also stops, and tops up to, rewardSpread standard
	// deviations short of the rewards still to come.
	margin := c.margin(e, g)
	if c.single {
		margin = 0
	}
	// Over the last two report ages of an unscored pass budget's window,
	// the course aimed at runs a standard deviation of the estimates'
	// error (half the margin) under the ideal curve: the last passes,
	// made on a picture of the peers' a report old, end over it only when
	// that picture was off by more. In the closing stretch the estimates
	// are close enough for the passes to end on the target rather than be
	// stopped short of it; where it could not begin (the traffic moved: a
	// stall, and the backlog every node read after it), the nodes make up
	// their lag on their working fractions, each on its own picture, and
	// the margin is the larger error their reports have shown.
	short := 0.0
	if c.lastReports(t, e) {
		short = margin / 2
	}
	switch {
	case g.achieved+g.conv*margin+rewardSpread*g.spread >= T:
		prm.exhausted = true
	case tt < endEff:
		// The horizon shrinks towards the end, but never below one tune
		// interval: a working rate must stay sane for as long as it may
		// be in force (a tune can come late on a starved machine).
		h := max(min(c.accel(e.start, endEff), endEff-tt), int64(c.cfg.tune))
		goal := c.sched.ideal(tt+h, e.start, e.end) - short
		if g.lead > 0 {
			// Rewards in flight are random (binomial); stop the main
			// phase two standard deviations short, and top up after.
			inflight := T / (float64(endEff-e.start) / 1e9) * (float64(g.lead) / 1e9)
			goal = min(goal, T-2*math.Sqrt(inflight))
		}
		q = (goal - g.achieved) / (float64(h) / 1e9) / g.conv
		if hm := c.settle(); g.lead == 0 && h < hm {
			// Near the end, a lag is made up over no less than the time
			// it takes to hear from the peers, towards the ideal curve
			// drawn on past the end: catching up at once on a picture
			// that the next reports will correct overspends on its
			// errors, and a pass cannot be taken back. An excess is
			// still corrected at once.
			goal = T*float64(tt+hm-e.start)/float64(endEff-e.start) - short
			q = min(q, (goal-g.achieved)/(float64(hm)/1e9))
		}
	case t+g.lead < e.end:
		rest := max(e.end-t-g.lead, int64(c.cfg.tune))
		q = (T - rewardSpread*g.spread - g.achieved) / (float64(rest) / 1e9) / g.conv
	default:
		// a reward for a pass now would arrive after the window: none
	}
	// Catching up is limited to five times the ideal rate: a lag is made
	// up over a few horizons rather than in one burst that a late tune
	// would stretch into an overshoot.
	return min(q, 5*T/c.span(e)/g.conv)
}

// rewardSpread is how many standard deviations of the rewards still to
// come a reward budget stops short of its target by: those rewards are
// random (Poisson), a pass cannot be taken back, and ending over target
// is worse than ending a little under (with one, the rewards in flight
// bring more than that about one time in six, and half a percent of the
// target more only rarely).
const rewardSpread = 1.0

// margin is the hard stop's margin, in passes: the error the
// peers' estimates have shown, at most marginShare of the target.
func (c *Controller) margin(e *estimate, g progress) float64 {
	return min(e.margin, marginShare*c.b.Target/g.conv)
}

// marginShare bounds the hard stop's margin, as a share of the target.
const marginShare = 0.005

// settle is how long it takes to hear from the peers: a sync interval and
// the exchange's lateness.
func (c *Controller) settle() int64 { return c.lateness }

// span is the length of the current period less the reserve, in seconds.
func (c *Controller) span(e *estimate) float64 {
	return float64(e.end-c.sched.reserve-e.start) / 1e9
}

// working turns the wanted rate q into the lanes' parameters: the working
// pass fraction (or, with no traffic measured, the cold rate of a start or
// the allowance of silence after traffic) and, for scored budgets, the
// score cut.
func (c *Controller) working(t int64, e *estimate, g progress, q float64, prm *params) {
	rate := e.rate
	if c.sk != nil {
		rate = c.steadyRate(t, rate)
		q = c.crowdLead(t, e, g, q, rate)
	}
	switch {
	case rate > 0:
		prm.p = clamp01(q / rate)
		prm.nextP = clamp01(c.b.Target / c.span(e) / g.conv / rate)
	case c.sk == nil && !c.b.Delay && e.offered > 0 && t > e.start:
		// Silence after traffic: no working fraction can be told without
		// a rate, and a start's token bucket (a token per lane at most)
		// would refuse nearly every event of the burst that ends the
		// silence, however far behind its course the budget is. The
		// allowance bounds what passes instead (guard.go).
		prm.p, prm.nextP, prm.silent = 1, 1, true
	default:
		// No traffic measured and none yet in the period (a start), or a
		// scored or delay budget after silence: lanes pass at the ideal
		// rate until the next tune.
		prm.cold = true
		prm.coldRate, prm.coldBurst = c.coldRate()
	}
	if prm.exhausted {
		prm.p = 0
	} else {
		prm.q = q
	}
	prm.cut, prm.nextCut = math.Inf(1), math.Inf(1)
	if c.sk != nil {
		c.sk.decay(c.forget(t, e))
		prm.cut = c.consensusCut(c.sk.upper(prm.p), t, e.period)
		prm.nextCut = c.sk.upper(prm.nextP)
	}
}

// record updates the cluster limiter's smoothed quantities and the
// snapshot.
func (c *Controller) record(t int64, e *estimate, g progress, prm *params, synced bool) {
	T, span := c.b.Target, c.span(e)
	P := c.cfg.decay
	ideal := 0.0
	if e.rate > 0 {
		ideal = clamp01(T / span / g.conv / e.rate)
	}
	instProp := c.share
	if e.peersKnown && e.rate > 0 {
		instProp = e.ownRate / e.rate
	}
	if !c.tuned {
		c.proportion, c.idealRate = instProp, ideal
	} else if synced {
		c.proportion = P*c.proportion + (1-P)*instProp
		c.idealRate = P*c.idealRate + (1-P)*ideal
	}
	c.tuned, c.tunedAt = true, t

	idealNow := c.sched.ideal(t, e.start, e.end)
	c.snap = Snapshot{
		Budget:          c.b.Name,
		At:              time.Unix(0, t),
		Period:          e.period,
		Target:          T,
		Ideal:           idealNow,
		ClusterOffered:  e.offered,
		ClusterPassed:   e.passed,
		ClusterRewards:  e.rewards,
		Achieved:        g.achieved,
		ClusterRate:     e.rate,
		LocalRate:       e.ownRate,
		LocalProportion: c.proportion,
		Conversion:      g.conv,
		RewardDelay:     time.Duration(g.lead),
		IdealPassRate:   c.idealRate,
		WorkingPassRate: prm.p,
		Cut:             prm.cut,
		Lag:             idealNow - g.achieved,
		LagTime:         time.Duration((idealNow - g.achieved) / (T / span) * 1e9),
		Exhausted:       prm.exhausted,
	}
}

// coldRate is what each lane may pass per second while no traffic has
// been measured: the ideal rate of the budget times this node's share,
// split across its lanes, with a burst of two tune intervals.
func (c *Controller) coldRate() (rate, burst float64) {
	span := float64(c.sched.length-c.sched.reserve) / 1e9
	rate = c.sched.target / span * c.share / float64(max(1, len(c.laneList)))
	return rate, max(1, 2*rate*c.cfg.tune.Seconds())
}

// forget returns the factor the score sketch decays by at t. By the time
// since the last tune, so that a controller whose lanes sat idle, and that
// was not visited every tune interval (see Tree.Tune), forgets as much as
// one visited in every round. Scores that drifted (scoresMoved) are
// forgotten faster, down to a quarter at each tune that brought new
// scores: it is the new scores that the sketch must soon be made of, and
// an idle spell brings none (the rounds just after the last event would
// otherwise judge again the interval the last busy tune judged, and
// forget it again).
func (c *Controller) forget(t int64, e *estimate) float64 {
	since := int64(c.cfg.tune)
	if c.tuned {
		since = max(0, t-c.tunedAt)
	}
	f := math.Exp2(-float64(since) / float64(c.cfg.scoreMemory))
	if e.fresh > 0 && c.scoresMoved(t) {
		f = min(f, 0.25)
	}
	return f
}

// scoresMoved reports whether the scores have drifted away from the
// sketch's: over the last sync interval the node passed a fraction of its
// events that differs from the one its cuts were meant to pass by more
// than four standard deviations of the count. The sketch then forgets its
// past faster, and is soon made of the scores as they are now.
func (c *Controller) scoresMoved(t int64) bool {
	from := max(t-int64(c.cfg.sync), c.hist.oldest())
	a, b := c.hist.at(from), c.hist.at(t)
	exp, pas := b.exp-a.exp, b.pas-a.pas
	return exp >= 20 && math.Abs(pas-exp) > 4*math.Sqrt(exp)
}

// consensusCut averages this node's cut with the cuts its fresh peers
// reported, weighted by how many scores each has seen: every node's sketch
// is a sample of the same cluster traffic, and the average of the cluster's
// estimates is far less noisy than one node's (which matters most for
// small pass fractions, where a node sees few scores above the cut).
func (c *Controller) consensusCut(own float64, t, period int64) float64 {
	if math.IsInf(own, 0) {
		return own
	}
	var w float64
	for _, l := range c.laneList {
		w += float64(l.offered.Load())
	}
	if w == 0 {
		return own
	}
	sum, total := own*w, w
	// A peer's cut was made for the traffic as it knew it: not before it
	// could hear of a change of regime (a flash crowd on some nodes) does
	// it stand for the cut now.
	heard := c.regimeAt + int64(c.cfg.sync) + c.lateness
	for _, p := range c.peerList {
		if t-p.at > c.stale() || p.rep.Period != period || p.at < heard ||
			math.IsInf(p.rep.Cut, 0) || math.IsNaN(p.rep.Cut) || p.rep.Total.Offered == 0 {
			continue
		}
		n := float64(p.rep.Total.Offered)
		sum += p.rep.Cut * n
		total += n
	}
	return sum / total
}

// steadyRate smooths the cluster rate that scored budgets divide by (over
// about ten seconds), unless it moved by more than a quarter: random
// fluctuations of traffic then leave the score cut where it is (the oracle
// cut is one cut for the whole window), while a real change of regime is
// followed at once.
func (c *Controller) steadyRate(t int64, r float64) float64 {
	const tau = 10 * time.Second
	switch {
	case c.steady <= 0 || r <= 0 || t < c.warmUntil:
		c.steady = r
	case math.Abs(r/c.steady-1) > 0.25:
		if r > c.steady && c.base == 0 {
			// the traffic before a crowd, and how long it had held
			c.base, c.baseHeld = c.steady, t-c.regimeAt
		} else if c.base > 0 && r < 1.25*c.base {
			c.base = 0 // back to it
		}
		c.steady, c.regimeAt = r, t
	case t > c.steadyAt:
		a := 1 - math.Exp(-float64(t-c.steadyAt)/float64(tau))
		c.steady += a * (r - c.steady)
	}
	c.steadyAt = t
	return c.steady
}

// accel is the horizon over which lag or excess is made up. Scored budgets
// take at least a tenth of the window: every change of the working rate
// moves the score cut, and a cut that wanders lets lower scores through
// while higher ones were turned away, so they correct small random lags
// slowly (rate changes are still followed at once, through the cluster
// rate).
func (c *Controller) accel(start, endEff int64) int64 {
	h := int64(c.cfg.accel)
	if c.sk != nil {
		h = max(h, (endEff-start)/10)
	}
	return h
}

func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}

// crowdShare is how far ahead of its course, as a share of its target, a
// scored budget may run in a crowd (see crowdLead).
const crowdShare = 0.01

// crowdLead is the wanted rate of a scored budget while a crowd brings
// more traffic than before it (base): the square root of the crowd's
// factor more, as long as the budget is within crowdShare of its target
// of its course, so that it takes more of the crowd's best
// scores (its cut still rises, by the other square root) and passes fewer
// of the ordinary ones after. A crowd is brief, and comes on traffic that
// held for the acceleration horizon before it (not a backlog read after a
// stall): traffic that stays up that long is the new regime, and the end
// of the window is no time to run ahead.
func (c *Controller) crowdLead(t int64, e *estimate, g progress, q, rate float64) float64 {
	endEff := e.end - c.sched.reserve
	h := c.accel(e.start, endEff)
	if c.base <= 0 || c.baseHeld < h || rate <= c.base || q <= 0 || t-c.regimeAt > h || t+h > endEff {
		return q
	}
	// Near its course only: a budget behind it catches up at its own
	// pace, at the cut that pace sets.
	ahead := g.achieved - c.sched.ideal(t, e.start, e.end)
	if math.Abs(ahead) >= crowdShare*c.b.Target {
		return q
	}
	return q * math.Sqrt(rate/c.base)
}
