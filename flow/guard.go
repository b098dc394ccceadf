package flow

import (
	"math"
	"sync/atomic"
)

// Over-target protection. The working pass rate paces a budget on
// estimates; three guards keep those estimates' errors from spending more
// than the target:
//
//   - the hard stop: a budget is exhausted once what is achieved, counting
//     what peers that went stale may have passed since their last report
//     (their pass rate over a sync interval: a peer gone quiet published
//     at least that often before), plus a margin for the error of what the
//     fresh peers are estimated to have passed since theirs (twice the
//     error their next reports have shown), reaches the target;
//   - the node's allowance: between two tunes, a node's lanes pass at
//     most a sync interval's worth of its part of the wanted cluster pass
//     rate, refilled at twice that rate, and never more than its part of
//     what is left of the target, so that a burst (a backlog read at once
//     after a rebalance or a broker restart) is not passed at a working
//     fraction tuned for the traffic before it, nor past the target
//     before the next tune sees it (the allowance is granted afresh at
//     every tune: a bucket carried over from tune to tune held back a
//     scored budget's best events in a flash crowd); a budget its traffic
//     cannot exhaust gets its part of what is left at once, so that the
//     backlog of a budget far from its target is not refused;
//   - one node at a time when few passes are left: once fewer passes
//     remain than there are nodes (the last ones, which nodes deciding at
//     once on the same picture would each take), and throughout for
//     unscored budgets too small to give every node a pass per sync
//     interval, only the node owning the first source by name (among its
//     own and the peers' fresh ones) passes, from what it knows exactly of
//     its own passes.

// allowance is what a node's lanes of one budget may pass, shared by the
// lanes (one atomic add per pass): free passes, plus a token bucket that
// starts with burst tokens at from and fills at rate per nanosecond (for
// span nanoseconds, when span is set, and at slow per nanosecond after),
// never past limit passes in all.
//
// The span is the time until the next tune is due, with a tune interval of
// slack (params.until, when the lanes take the tuner for late): an
// allowance is made for the time between two tunes. Past it (a tuner
// starved on a loaded machine, or a controller it skipped while its lanes
// were idle) the bucket fills at the node's part of the ideal rate, never
// faster than before: the catch-up it was granted for is not stretched over
// a gap its tune did not foresee, and the burst that ends the gap is passed
// at the wanted rate from the next tune, which the burst's lanes ask for.
// Without it, a backlog read after a broker restart on a loaded machine,
// its tunes 0.3 to 0.6 s apart and its allowances granted up to a second
// before it arrived, had every node pass a thousand passes or so at a
// fraction of 1 in one gap.
//
// Past upto nanoseconds after from (when upto is set: the span, and twice
// StaleAfter past it: config.frozen) only the free passes are left. A
// tuner silent for that long (a process frozen and woken, a clock stepped
// forward) granted the allowance on a picture that old, which misses what
// the peers passed since; the lanes of a node just woken decide before
// its tuner runs again, and a bucket filled over the whole gap had them
// pass its part of the ideal rate over it, which the peers had made up
// meanwhile.
//
// An instant before from counts as from. Lanes decide with the instant
// their batch was taken, which can precede the tune that granted the
// allowance: a partition goroutine behind the poll loop (a loaded machine,
// a decode waiting for the schema registry), or a clock stepped forward
// between the two. Such a pass is still one of this tune's.
type allowance struct {
	limit int64
	free  float64
	from  int64
	burst float64
	rate  float64
	span  int64
	slow  float64
	upto  int64
	// longer, when set: how much longer than upto the allowance lasts for
	// a light budget's rest (restUntil), while the tree's tuner runs
	// (alive: the instant until which its rounds are taken to run); once it
	// stalls, upto applies as it is. A rest lengthens the allowance's life,
	// not its fill: past span the bucket fills at slow, so that a backlog
	// read late in a rest taken behind the course (the first reads after a
	// broker restart, the lanes idle until then) passes what a tune's
	// allowance holds by then, not the wanted rate over the whole rest
	longer int64
	alive  *atomic.Int64
	used   atomic.Int64
	// closing: the allowance paces the node by rate (closing.go), and
	// what it left unused carries over to the next
	closing bool
}

// take reserves one pass at t, or reports that the allowance is spent. A
// spent allowance costs a load, not a write to the line the node's lanes
// share. Without capped, the limit (what is left of the period tuned
// for) does not apply: the pass is for a lane already in the next period.
func (a *allowance) take(t int64, capped bool) bool {
	room := a.free
	upto := a.upto
	if a.longer > 0 && t <= a.alive.Load() {
		upto += a.longer
	}
	if upto == 0 || t-a.from <= upto {
		room += a.burst + a.fill(t)
	}
	for {
		n := a.used.Load() + 1
		if (capped && n > a.limit) || float64(n) > room {
			return false
		}
		if a.used.CompareAndSwap(n-1, n) {
			return true
		}
	}
}

// fill is what the bucket has filled with by t, at rate for span
// nanoseconds (when set) and at slow after.
func (a *allowance) fill(t int64) float64 {
	dt := max(t-a.from, 0)
	if a.span > 0 && dt > a.span {
		return a.rate*float64(a.span) + a.slow*float64(dt-a.span)
	}
	return a.rate * float64(dt)
}

// give returns a pass taken but not made (a level above refused it).
func (a *allowance) give() { a.used.Add(-1) }

// guard sets the node's allowance in prm, and stops the lanes of a node
// that is not the one to pass the last few passes (or a sparse budget's).
// left is what may still be passed, in passes.
func (c *Controller) guard(t int64, e *estimate, g progress, q float64, prm *params) {
	if prm.cold || prm.exhausted || c.b.Delay {
		return
	}
	// The node's traffic as measured, or as its share of the cluster's
	// while its lanes have just opened.
	own := max(e.ownRate, c.share*e.rate)
	// What may still be passed, in passes. Once one node at a time
	// passes, the others' passes since their reports are taken at their
	// reported rates (an upper bound: they stopped), with no margin.
	left := (c.b.Target - g.achieved) / g.conv
	ideal := c.b.Target / c.span(e) / g.conv // the cluster's ideal pass rate
	c.single = left < 1/c.share || c.sparse(t, e)
	if c.single {
		if !c.leads(t) {
			prm.p, prm.nextP = 0, 0
			prm.allow = &allowance{}
			return
		}
		// The one node passing passes for the whole cluster.
		prm.p = clamp01(q / own)
		prm.nextP = clamp01(ideal / own)
	}
	// Room for this node's part of a sync interval's passes at the wanted
	// cluster rate (at least the ideal one), refilled at twice that rate:
	// the wanted rate, unlike the working fraction, does not depend on the
	// traffic measured, which a stall and the backlog after it distort.
	part := c.share
	if e.rate > 0 {
		part = max(part, e.ownRate/e.rate)
	}
	mine := part // the node's part of the cluster's passes
	if c.single {
		mine = 1
	}
	rate := max(q, ideal) * mine
	ownIdeal := ideal * mine
	// Until the next tune, this node passes at most its part of what is
	// left before the hard stop (what is left less its margin; one pass
	// while one is left; all of it when it passes alone): between two
	// tunes, a backlog read at once with a working fraction tuned for
	// the traffic before it is bounded by what is left, not only by the
	// pace, and the hard stop of the next tune comes in time. The margin
	// is what the hard stop keeps for the error of the peers' estimates;
	// a limit that spent it would let the last tune before the stop pass
	// to the target on a picture of the peers short by that error.
	limit := left
	if !c.single {
		stop := max(left-c.margin(e, g), 0)
		limit = math.Floor(stop * part)
		if limit < 1 && left >= 1 {
			limit = 1
		}
	}
	// A budget its traffic cannot exhaust has no over side to guard: the
	// node may pass its part of what is left at once, so that a backlog of
	// a budget far from its target is never refused for its speed. That
	// is, what is left is more than four times what the cluster offers
	// until the end of the period, at the rate measured or at the average
	// over the period so far, whichever is more (a stall depresses the
	// rate measured, not the traffic to come).
	free := 0.0
	traffic := e.rate
	if t > e.start {
		traffic = max(traffic, e.offered/(float64(t-e.start)/1e9))
	}
	far := func(left float64) bool { return left > 4*traffic*float64(e.end-t)/1e9 }
	if far(left) {
		free = limit
	}
	if c.resuming(t) {
		// The picture is older than the gap: only a budget far from its
		// target passes until a peer is heard from again, far even if
		// every peer passed every event it was offered since its report.
		unseen := 0.0
		for _, p := range c.peerList {
			unseen += p.offRate * float64(max(t-p.at, 0)) / 1e9
		}
		if !far(left - unseen) {
			free = 0
		}
		prm.allow = &allowance{limit: int64(max(limit, 0)), free: free}
		return
	}
	if c.closing(t, e) {
		c.closingAllowance(t, q, limit, prm)
		return
	}
	if prm.silent {
		// Silence after traffic: the node may pass its part of the lag
		// behind the ideal curve at once, and its part of the ideal rate
		// after, with one pass of burst: a burst that ends the silence is
		// passed as far as the course wants it, and no further, however
		// dense (a backlog read at once after a stall), until the next
		// tune measures its rate. A lag longer than the catch-up a
		// horizon allows (five times the ideal rate over it, as wanted
		// caps it) is left to the working fraction after.
		lag := (c.sched.ideal(t+g.lead, e.start, e.end) - g.achieved) / g.conv
		lag = min(mine*lag, 5*ownIdeal*float64(c.accel(e.start, e.end-c.sched.reserve))/1e9)
		free = max(free, min(limit, lag))
		prm.allow = &allowance{limit: int64(max(limit, 0)), free: max(free, 0), from: t, burst: 1, rate: ownIdeal / 1e9,
			upto: c.cfg.frozen()}
		return
	}
	prm.allow = &allowance{limit: int64(max(limit, 0)), free: free, from: t, burst: max(2, rate*c.cfg.sync.Seconds()), rate: 2 * rate / 1e9,
		span: prm.until - t, slow: min(2*rate, ownIdeal) / 1e9, upto: prm.until - t + c.cfg.frozen()}
}

// resuming reports whether the node passes only the budgets far from their
// targets at t: its tuner resumed after a gap (Tree.resumed: the process
// was frozen and woken, or its clock stepped forward) less than a report
// age ago, it has peers, and none has been heard from since. Its peers'
// reports are then older than the gap: the passes they made meanwhile
// (its own sources' too, when the group gave them to another node) are
// missing from the picture, which takes the silence for an outage of the
// exchange and extrapolates the peers at their rates of
// before, and a node that went on from it would make up a lag that is not
// there. A report made after the gap ends the hold, which lasts a report
// age at most (past it, the exchange is down indeed).
func (c *Controller) resuming(t int64) bool {
	r := c.tree.resumed.Load()
	if r == 0 || t-r > c.stale() || (c.share >= 1 && len(c.peerList) == 0) {
		return false
	}
	for _, p := range c.peerList {
		if p.heard && p.at >= r {
			return false
		}
	}
	return true
}

// sparse reports whether an unscored budget is too small for every node to
// pass once per sync interval, and the first source carries enough
// traffic for its node to pass for the whole cluster.
func (c *Controller) sparse(t int64, e *estimate) bool {
	if c.sk != nil {
		return false
	}
	ideal := c.b.Target / c.span(e)
	if ideal*c.cfg.sync.Seconds()*c.share >= 1 {
		return false
	}
	return c.firstRate(t, e.ownRate) >= 4*ideal
}

// first returns the first source by name among the own lanes and the
// fresh peers, and whether it is an own lane.
func (c *Controller) first(t int64) (name string, own bool, p *peer) {
	for _, l := range c.laneList {
		if !own || l.source < name {
			name, own = l.source, true
		}
	}
	stale := c.stale()
	found := own
	for _, q := range c.peerList {
		if t-q.at <= stale && (!found || q.source < name) {
			name, own, p, found = q.source, false, q, true
		}
	}
	return name, own, p
}

// leads reports whether this node passes when one node at a time does:
// it owns the first source, and has had time to hear from every peer (or
// is alone).
func (c *Controller) leads(t int64) bool {
	if c.share < 1 && t < c.warmUntil {
		return false
	}
	_, own, _ := c.first(t)
	return own
}

// firstRate is the offered rate of the first source's node: this node's
// (ownRate) when it owns it, else the first peer source's own.
func (c *Controller) firstRate(t int64, ownRate float64) float64 {
	_, own, p := c.first(t)
	switch {
	case own:
		return ownRate
	case p != nil && p.rateKnown:
		return p.offRate
	}
	return 0
}
