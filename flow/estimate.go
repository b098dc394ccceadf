package flow

import "math"

// estimate is the controller's picture of the cluster at one instant.
type estimate struct {
	period          int64
	start, end      int64
	offered, passed float64 // cluster, in the current period
	rewards         float64
	totalPassed     float64 // cluster, all time
	totalRewards    float64
	rate            float64 // cluster offered rate, events/s
	ownRate         float64
	fresh           float64 // events the own lanes offered since the last tune
	peersKnown      bool
	// reserve: what the peers that went stale may have passed since their
	// last reports, unseen (not in passed); margin: the error of what the
	// fresh ones are estimated to have passed (extrapolated)
	reserve, margin, extrapolated float64
}

func (c *Controller) estimate(t int64) estimate {
	if c.rewarm || !c.tuned {
		warm := t + 2*int64(c.cfg.sync) + int64(c.cfg.staleAfter)
		if !c.tuned || t < c.fillUntil {
			c.fillUntil = warm
		}
		c.rewarm, c.warmUntil = false, warm
	}
	var e estimate
	e.period, e.start, e.end = c.sched.period(t)
	if e.period != c.closePeriod {
		c.closePeriod, c.closeAt = e.period, math.MaxInt64 // closing.go
	}
	c.partsFrom = c.partsAt(t)
	c.addOwn(t, &e)
	knownRate, known, fresh := c.addPeers(t, &e)
	// The cluster rate is the sum of the known sources' rates (the
	// fresh ones', or every one's while the exchange is down). While some
	// are not known yet (the first syncs after a start or a rebalance),
	// the unknown sources are assumed to carry the average of the known
	// ones, counting this node as holding its share of the cluster.
	// What the peers passed since their reports is estimated, with the
	// error their next reports show: the hard stop reserves twice that
	// (the errors of n peers adding up as sqrt(n)).
	// Over the closing stretch, the error of the estimates made in it,
	// once some were checked.
	err := c.peerErr
	if c.closeAt < t && c.closeN > 0 {
		err = c.closeErr
	}
	e.margin = 2 * err * math.Sqrt(e.extrapolated)
	e.peersKnown = fresh > 0
	e.rate = knownRate
	own := 1.0 / c.share
	if t < c.warmUntil || known == 0 {
		if n := float64(known + 1); n < own {
			e.rate = knownRate * own / n
		}
	}
	// The same while warming up for what the sources not heard from at
	// all have done in the period: as much as the average source heard
	// from. Else a node that starts with its peers, before their first
	// reports arrive, takes its own passes for the cluster's and makes up
	// a lag that is not there. Only in the controller's first warm-up: a
	// source it has not heard from after listening that long is new (a
	// node that joins with its own traffic), and has passed nothing yet,
	// while taking it for an average one would make the others take the
	// cluster for a share ahead of its course and stop passing.
	if n := float64(1 + len(c.peerList)); t < c.fillUntil && n < own {
		f := own/n - 1
		e.offered += f * e.offered
		e.passed += f * e.passed
		e.rewards += f * e.rewards
	}
	return e
}

// addOwn adds this node's lanes to e (exactly), records them in the own
// history, and sets e.ownRate.
func (c *Controller) addOwn(t int64, e *estimate) {
	var accOff, accPass float64
	dt := 0.0
	if last := c.hist.newest(); c.hist.n > 0 && t > last {
		dt = float64(t-last) / 1e9
	}
	c.ownSmooth = 0
	for _, l := range c.laneList {
		total, in, _ := l.counts(e.period)
		// deltas since the last look feed the own history (restored
		// counters are not new traffic)
		accOff += float64(total.Offered - l.seenOff)
		accPass += float64(total.Passed - l.seenPass)
		c.ownSmooth += c.rateOf(&l.view, c.partsFrom)
		l.seenOff, l.seenPass, l.seenRew = total.Offered, total.Passed, total.Rewards
		e.offered += float64(in.Offered)
		e.passed += float64(in.Passed)
		e.rewards += in.Rewards
		e.totalPassed += float64(total.Passed)
		e.totalRewards += total.Rewards
		if c.sk != nil && l.sk != nil { // nil: not adapted to scoring yet
			c.sk.merge(l.sk)
		}
	}
	// What the lanes were meant to pass (the working fraction in force,
	// or what they passed when it was not: cold, silent, or late), and
	// what the wanted rate asked of the cluster meanwhile.
	intended, want := accPass, 0.0
	if prm := c.params.Load(); !prm.cold && !prm.silent && t <= max(prm.until, prm.rest) {
		intended, want = prm.p*accOff, prm.q*dt
	}
	c.hist.add(t, accOff, accPass, intended, want)
	e.fresh = accOff

	// Own offered rate over the last sync interval (or what we have).
	from := max(t-int64(c.cfg.sync), c.hist.oldest())
	if from < t {
		e.ownRate = (c.hist.at(t).off - c.hist.at(from).off) / (float64(t-from) / 1e9)
	}
	// A burst that ended (a backlog read) leaves the rate over the sync
	// interval above the traffic that follows it for up to a sync
	// interval: when that rate is a burst's (more than twice the smoothed
	// one), the rate of the last two tune intervals stands for it once it
	// fell short of it as a surge exceeds it. Steady traffic that arrives
	// in batches keeps its rate over the sync interval.
	if recent := max(t-2*int64(c.cfg.tune), c.hist.oldest()); recent < t && recent > from && e.ownRate > surgeMin*c.ownSmooth {
		n, dt := c.hist.at(t).off-c.hist.at(recent).off, float64(t-recent)/1e9
		if fell(n, dt, e.ownRate) {
			e.ownRate = n / dt
		}
		return
	}
	// A pause of the own lanes (a starved machine, a fetch or a commit
	// that stalls: no event over the last two tune intervals where the
	// smoothed rate expects several) leaves the rate over the sync
	// interval under the smoothed one, while the events it holds back are
	// late, not gone: they come as a backlog once the lanes go on. Over
	// the pause the own traffic counts at its smoothed rate: a working
	// fraction raised for a rate the pause depressed would pass that
	// backlog at it, on top of what the peers pass to make up the passes
	// the pause held back. Traffic that falls (a crowd's end) goes on.
	if recent := max(t-2*int64(c.cfg.tune), c.hist.oldest()); recent < t && recent > from &&
		c.hist.at(t).off == c.hist.at(recent).off && c.ownSmooth*float64(t-recent)/1e9 >= pauseMin {
		e.ownRate = max(e.ownRate, c.ownSmooth)
	}
}

// pauseMin is how many events the own lanes' smoothed rate must expect
// over two tune intervals for none to be a pause rather than chance.
const pauseMin = 5

// addPeers adds the peers' sources to e: reported, and extrapolated while
// fresh. It returns the own rate plus the known rates of the peers it
// extrapolates, how many peers these are, and how many of them are fresh.
//
// When no peer is fresh the exchange is most likely down rather than every
// peer gone: the peers are then extrapolated too, and their rates count in
// the cluster's, as they carry on, else their passes since their last
// reports would look like a lag that this node alone makes up (an
// overspend). Every node then takes the cluster's rate for the same, the
// sum of its sources' rates over their last reports (holdRates; following
// the own traffic through a surge, see peerRate), and passes the same
// fraction of its traffic, the fraction each extrapolates its peers'
// passes with.
func (c *Controller) addPeers(t int64, e *estimate) (knownRate float64, known, fresh int) {
	stale, anyFresh := c.stale(), c.anyFresh(t)
	if anyFresh && c.down {
		c.upAt = t
	}
	c.down = !anyFresh
	knownRate = e.ownRate
	// The smoothed cluster rate, which sets the parts of the closing
	// stretch (closing.go), before the peers' passes are estimated from it.
	c.clusterRate = c.ownSmooth
	for _, p := range c.peerList {
		if t-p.at <= stale {
			c.clusterRate += c.rateOf(&p.smooth, c.partsFrom)
		}
	}
	for _, p := range c.peerList {
		isFresh := t-p.at <= stale
		e.totalPassed += float64(p.rep.Total.Passed)
		e.totalRewards += p.rep.Total.Rewards
		from, ok := c.addReported(p, e)
		if !ok {
			continue
		}
		// A peer last heard before the exchange came back is still in
		// the outage until it could have published since.
		inOutage := !anyFresh || p.at < c.upAt && t-c.upAt <= stale
		if !isFresh && !inOutage {
			// Gone quiet: it published at least every sync interval
			// while it was heard from.
			e.reserve += p.passRate * float64(min(t-from, int64(c.cfg.sync))) / 1e9
			continue
		}
		if !isFresh && !p.held && p.rateKnown {
			c.holdRates(p)
		}
		if p.rateKnown && p.rep.Total.Offered > 0 {
			knownRate += c.peerRate(p, e.ownRate)
			known++
			if isFresh {
				fresh++
			}
		}
		if t > from {
			c.extrapolate(p, t, from, e)
		}
	}
	return knownRate, known, fresh
}

// addReported adds what a peer source reported for the current period and
// returns the instant from which it is to be extrapolated; false for a
// report of a later period (a clock ahead of ours: ignored until we catch
// up).
func (c *Controller) addReported(p *peer, e *estimate) (from int64, ok bool) {
	var base Counters
	from = p.at
	switch {
	case p.rep.Period == e.period:
		base = p.rep.InPeriod
	case p.rep.Period < e.period:
		from = max(p.at, e.start)
	default:
		return 0, false
	}
	e.offered += float64(base.Offered)
	e.passed += float64(base.Passed)
	e.rewards += base.Rewards
	return from, true
}

// extrapolate adds what peer source p offered, passed and was rewarded
// between from and t.
func (c *Controller) extrapolate(p *peer, t, from int64, e *estimate) {
	dt := float64(t-from) / 1e9
	e.offered += c.peerOffered(p, from, t)
	e.rewards += p.rewRate * dt
	e.totalRewards += p.rewRate * float64(t-p.at) / 1e9
	passes := c.peerPasses(p, from, t)
	e.passed += passes
	e.totalPassed += passes * float64(t-p.at) / float64(t-from)
	e.extrapolated++
}

// peerPasses estimates what peer source p passed between from and t.
// Peers run the same controller: their pass fraction since the report
// follows ours. Reports older than our history (a long outage of the
// exchange) pass at their reported rate up to its start, then at our
// fraction. When one node at a time passes, each peer passes as it did.
//
// Over the closing stretch, nodes pass their parts of the wanted cluster
// rate: the peer passed its part of what that rate asked (closingPasses).
func (c *Controller) peerPasses(p *peer, from, t int64) float64 {
	f0 := max(from, c.hist.oldest())
	if f0 >= t || c.single {
		return p.passRate * float64(t-from) / 1e9
	}
	passes := p.passRate * float64(f0-from) / 1e9
	split := min(max(c.closeAt, f0), t)
	if split > f0 {
		if f, ok := c.hist.fraction(f0, split); ok {
			passes += c.peerOffered(p, f0, split) * f
		} else {
			passes += p.passRate * float64(split-f0) / 1e9
		}
	}
	if split < t {
		if c.clusterRate > 0 {
			passes += c.closingPasses(p, split, t)
		} else {
			passes += p.passRate * float64(t-split) / 1e9
		}
	}
	return passes
}

// A peer's traffic since its report is taken at its reported rate, or at
// its ratio to this node's own traffic (relate) when the own traffic grew
// well beyond what it was over the span of the peer's report: a surge that
// comes to every node at once, such as the backlog each reads after a
// stall that all sat through (a broker restart), shows in the peers'
// reports only a sync interval later, and until then each node would take
// itself for the whole cluster's traffic, and pass for it. A node alone in
// a surge takes its peers for busier than they are for as long: it passes
// less for that time, and makes it up after. Growth short of surgeMin
// times, or within three standard deviations of the count (Poisson), is
// taken for noise, which would otherwise bias the peers' rates upwards
// (the larger of two noisy estimates). The same holds the other way once
// a burst ends (burstEnded): a report whose span held a burst of the own
// traffic shows the backlog's rate, not the traffic that follows it.
const surgeMin = 2

// surged reports whether the own lanes' n events over dt seconds are a
// surge against the rate ownThen.
func surged(n, dt, ownThen float64) bool {
	exp := ownThen * dt
	return n > surgeMin*exp+3*math.Sqrt(exp)
}

// burstEnded reports whether peer p's rates were measured over a burst of
// the own traffic (a backlog read), well above its smoothed rate, that
// was a burst of the peer's traffic too: a peer that read no backlog
// while this node read one (the partitions of a crashed node, taken over
// by this one) relates to the burst at a ratio that says nothing of the
// traffic after it.
func (c *Controller) burstEnded(p *peer) bool {
	return p.ratioKnown && p.burst && !math.IsInf(p.ownThen, 0) && p.ownThen > surgeMin*c.ownSmooth
}

// fell reports whether the own lanes' n events over dt seconds fell
// short of the rate ownThen as a surge exceeds it.
// ownThen is finite: burstEnded checks it for a peer's.
func fell(n, dt, ownThen float64) bool {
	exp := ownThen * dt
	return exp > surgeMin*n+3*math.Sqrt(exp)
}

// ratio is peer p's traffic to the own lanes': as last related, or, for
// a peer not related yet (a controller made again after its node held no
// lane for a while, its lanes opened in the stall), that of an own lane of
// average traffic, as sources not heard from are taken to carry what the
// ones heard from do. false without a lane.
func (c *Controller) ratio(p *peer) (float64, bool) {
	if p.ratioKnown {
		return p.ratio, true
	}
	if n := len(c.laneList); n > 0 {
		return 1 / float64(n), true
	}
	return 0, false
}

// peerRate is peer p's offered rate now, ownRate being the own lanes'
// over the last sync interval.
func (c *Controller) peerRate(p *peer, ownRate float64) float64 {
	r, ok := c.ratio(p)
	if !ok {
		return p.offRate
	}
	sync := c.cfg.sync.Seconds()
	return c.followOwn(p, r, p.offRate, ownRate, ownRate*sync, sync)
}

// peerOffered estimates what peer p offered between from and t.
func (c *Controller) peerOffered(p *peer, from, t int64) float64 {
	n := p.offRate * float64(t-from) / 1e9
	r, ok := c.ratio(p)
	if !ok || c.hist.n == 0 {
		return n
	}
	f0 := max(from, c.hist.oldest())
	if f0 >= t {
		return n
	}
	own := c.hist.at(t).off - c.hist.at(f0).off
	return c.followOwn(p, r, n, own, own, float64(t-f0)/1e9)
}

// followOwn is peer p's reported traffic n taken as the own traffic went
// since the span of its rates (r: its ratio to the own traffic): at least
// r·ownN after a surge of the own lanes, at most that once a burst of
// theirs that the span held has ended, n otherwise. ownN is the own
// traffic in n's units, count the own lanes' events over dt seconds.
//
// A peer whose last report predates this controller (made again after its
// node held no open lane of the budget for DropAfter: lanes released in a
// stall, partitions that moved) cannot be related to the own traffic over
// its span, which this controller never saw: the own lanes surge against
// it when, at its ratio (that of an own lane of average traffic until one
// is related), they offer well above what it reported. A backlog every
// node reads after a broker restart, whose partitions were all released
// and reassigned, is then taken for the cluster's, not this node's alone.
func (c *Controller) followOwn(p *peer, r, n, ownN, count, dt float64) float64 {
	switch {
	case surged(count, dt, p.ownThen):
		return max(n, r*ownN)
	case math.IsInf(p.ownThen, 1) && p.at < c.born && surged(r*count, dt, p.offRate):
		return max(n, r*ownN)
	case c.burstEnded(p) && fell(count, dt, p.ownThen):
		return min(n, r*ownN)
	}
	return n
}
