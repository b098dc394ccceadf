package flow

import (
	"cmp"
	"math"
	"slices"
)

// peer is the controller's memory of a source another node owns.
type peer struct {
	source                     string
	rep                        Report
	at                         int64
	offRate, passRate, rewRate float64 // per second, from its last reports
	rateKnown                  bool
	// ratio: what it offered over the span of a report's rates to what
	// this node's own lanes offered over the same span; ownThen: the own
	// lanes' offered rate over the span of its last rates, +Inf while
	// unknown (see relate)
	ratio, ownThen float64
	ratioKnown     bool
	// burst: its offered rate over the span of its last rates was a
	// surge against its own rate before that span (a backlog it read);
	// burstTo: the end of the last span that was one
	burst   bool
	burstTo int64
	// smooth: its offered rate smoothed over its reports (closing.go)
	smooth smoothed
	// heard: its report came through the exchange (not the last one of
	// a lane that closed here), so its age tells whether the exchange is
	// up (anyFresh)
	heard bool
	// held: its rates were set to its smoothed ones for an outage of the
	// exchange (holdRates), until its next report
	held bool
	// seen: the instant of the last sync that listed its source
	seen int64
}

// sourceRef is what a controller holds of one source: this node's open
// lane of it, or its peer (a source another node owns, or one whose lane
// closed here), never both.
type sourceRef struct {
	lane *Lane
	peer *peer
}

// newPeer returns a peer source not related to the own traffic yet: the
// spare one (dropped for a lane) when there is one, else a new one.
func (c *Controller) newPeer(source string) *peer {
	p := c.spare
	if p == nil {
		p = new(peer)
	}
	c.spare = nil
	*p = peer{source: source, ownThen: math.Inf(1)}
	return p
}

// addPeer adds p in the place of whatever the controller held of its
// source.
func (c *Controller) addPeer(p *peer) {
	c.srcs[p.source] = sourceRef{peer: p}
	c.peerList = append(c.peerList, p)
}

// dropPeer removes p, which a lane of its source replaces, and keeps it
// as the spare: nothing else points to it.
func (c *Controller) dropPeer(p *peer) {
	delete(c.srcs, p.source)
	for i, x := range c.peerList {
		if x == p {
			c.peerList = slices.Delete(c.peerList, i, i+1)
			break
		}
	}
	c.spare = p
}

// syncLocked takes in peers' latest reports, then re-tunes. Called under
// c.mu.
func (c *Controller) syncLocked(t int64, reps []Report) {
	// How late each report comes (its age beyond a sync interval), and
	// how late the one it replaces had grown (the same plus what its
	// publications missed). Most peers missing publications at once is an
	// outage of the exchange, no trend.
	sync := int64(c.cfg.sync)
	late, lateGap, n, gaps := int64(-1), int64(-1), 0, 0
	for i := range reps {
		r := &reps[i]
		ref := c.srcs[r.Source]
		if ref.lane != nil {
			c.viewOwn(ref.lane, r)
			continue
		}
		if interval, ok := c.take(ref.peer, r, t); ok {
			age := t - r.At.UnixNano() - sync
			late = max(late, age)
			lateGap = max(lateGap, age+interval-sync)
			n++
			if interval > 2*sync {
				gaps++
			}
		}
	}
	c.forgetPeers(t)
	c.learnErr()
	if 2*gaps <= n {
		late = lateGap
	}
	if late >= 0 {
		// Up at once (by a sync interval at most: one gap is no trend),
		// down slowly.
		late = min(late, c.lateness+int64(c.cfg.sync))
		c.lateness = max(late, c.lateness-(c.lateness-late)/16)
		c.tree.lateness.Store(c.lateness)
	}
	c.tuneLocked(t, true)
}

// take takes in a peer source's report at t, unless it is not newer than
// the one held; p is the peer the controller holds of the source (nil:
// none yet). It returns how long after the report it replaced this one
// was made (ok is false when it replaced none).
func (c *Controller) take(p *peer, r *Report, t int64) (interval int64, ok bool) {
	at := r.At.UnixNano()
	if p != nil {
		p.seen = t
	}
	switch {
	case p == nil:
		p = c.newPeer(r.Source)
		p.seen = t
		c.addPeer(p)
		if s := r.Since.UnixNano(); at-s >= int64(c.cfg.tune) {
			c.rates(p, r, Counters{}, s)
		}
	case at <= p.at:
		return 0, false // not newer than what we have
	default:
		interval, ok = at-p.at, true
		// Counters that went back (the report before counted work since
		// rolled back, e.g. a lane closed after an aborted transaction)
		// give no rate and no error: the peer keeps the rate it had.
		back := r.Total.Offered < p.rep.Total.Offered || r.Total.Passed < p.rep.Total.Passed || r.Total.Rewards < p.rep.Total.Rewards
		if back {
			break
		}
		if p.rateKnown && r.Period == p.rep.Period {
			// How far off the estimate of what it passed was (see
			// learnErr).
			pred := c.peerPasses(p, p.at, at)
			c.misses = append(c.misses, miss{at: at, from: p.at, pred: pred, d: float64(r.Total.Passed-p.rep.Total.Passed) - pred})
		}
		if at-p.at >= int64(c.cfg.tune)/2 {
			c.rates(p, r, p.rep.Total, p.at)
		}
	}
	p.rep, p.at, p.heard, p.held = *r, at, true, false
	p.smooth.add(r)
	return interval, ok
}

// rates sets peer p's rates from its report r and the counts it had at
// from, and relates them to this node's own traffic over the same span.
func (c *Controller) rates(p *peer, r *Report, before Counters, from int64) {
	at := r.At.UnixNano()
	dt := float64(at-from) / 1e9
	p.offRate = float64(r.Total.Offered-before.Offered) / dt
	p.passRate = float64(r.Total.Passed-before.Passed) / dt
	p.rewRate = (r.Total.Rewards - before.Rewards) / dt
	p.rateKnown = true
	smooth := c.rateOf(&p.smooth, from)
	p.burst = surged(p.offRate*dt, dt, smooth)
	if p.burst {
		p.burstTo = at
	}
	c.relate(p, from, at)
	// A pause of the peer's node alone (a starved process, a fetch that
	// stalls): the span's traffic fell far short of the source's smoothed
	// rate while the own lanes' did not. Its events are late, not gone:
	// they come as a backlog, which the peer passes at its fraction. Its
	// rates stand at the smoothed one, as through an outage (holdRates);
	// taken at the pause's, the cluster would look quieter than it is,
	// and this node would make up the passes the pause held back on top
	// of the backlog's. A smoothed rate that holds a burst of the source
	// (the backlog it read after a stall) is not its usual traffic: the
	// fall after it is the burst's end, not a pause.
	if smooth > 0 && p.burstTo <= from-rateMemory*int64(c.cfg.sync) && fell(p.offRate*dt, dt, smooth) && !math.IsInf(p.ownThen, 0) && !fell(p.ownThen*dt, dt, c.ownSmooth) {
		p.standAt(smooth)
	}
}

// standAt sets p's offered rate to r, its pass rate and its ratio to the
// own traffic in proportion.
func (p *peer) standAt(r float64) {
	if p.offRate > 0 {
		k := r / p.offRate
		p.passRate *= k
		p.ratio *= k
	}
	p.offRate = r
}

// holdRates sets peer p's rates, for an outage of the exchange, to its
// offered rate over its last reports (rateMemory sync intervals), its
// pass rate and its ratio to the own traffic in proportion. The span of
// its last report alone may have caught a pause of its node (a collection,
// a starved process): standing for its traffic through the whole outage,
// it would make every node take the cluster for quieter than it is, and
// pass more (a rate near zero moves the cluster's far more than a
// backlog's rate twice the usual).
func (c *Controller) holdRates(p *peer) {
	p.held = true
	if r := c.rateOf(&p.smooth, p.at); r > 0 {
		p.standAt(r)
	}
}

// relateMin is how many events the own lanes must have offered over a
// report's span for the ratio of the peer's traffic to the own to stand:
// enough that the ratio is known within a fifth or so (a Poisson count's
// error), and more than the stragglers a stall's first second brings
// (with a handful of own events and none of a stalled peer's, the ratio
// would read 0, and the peer would then be taken to stay idle through the
// surge after the stall).
const relateMin = 32

// relate records the own lanes' offered rate over [from, at], the span of
// peer p's rates, and the ratio of the peer's offered rate to it.
// Where the own lanes offered too little then (a stall that both sat
// through, or a start), the ratio of an earlier report stands: the span
// tells nothing of how the two compare.
func (c *Controller) relate(p *peer, from, at int64) {
	p.ownThen = math.Inf(1)
	// The own history reaches the last tune: a report made since is
	// related over the part of its span the history covers, if that is
	// half a sync interval at least (a shorter span, such as a first
	// report's just after a start, tells too little of the own rate).
	to := min(at, c.hist.newest())
	if c.hist.n == 0 || from < c.hist.oldest() || to-from < int64(c.cfg.sync)/2 {
		return
	}
	own := c.hist.at(to).off - c.hist.at(from).off
	p.ownThen = own / (float64(to-from) / 1e9)
	if own >= relateMin {
		p.ratio, p.ratioKnown = p.offRate/p.ownThen, true
	}
}

// stale is the age past which a peer's report no longer stands for the
// source's current traffic.
func (c *Controller) stale() int64 { return int64(c.cfg.staleAfter) + c.lateness }

// anyFresh reports whether some peer's report that came through the
// exchange is fresh at t: whether the exchange is up. The last report of
// a lane that closed here is fresh too, but tells nothing of the
// exchange (a partition that moves away while the exchange is down).
func (c *Controller) anyFresh(t int64) bool {
	for _, p := range c.peerList {
		if p.heard && t-p.at <= c.stale() {
			return true
		}
	}
	return false
}

// miss is how far the estimate of what a peer source passed between two
// of its reports was off (d: what it passed less pred, the estimate), the
// later one made at at.
type miss struct {
	at, from int64
	pred, d  float64
}

// learnErr learns the error of the estimates of the peers' passes from
// the misses of the reports a sync took in (peerErr, a source's typical
// error, which sets the hard stop's margin). The sources a node publishes
// together (at one instant) share its estimate's errors: as a node's
// sources pass one fraction, their errors add up; over the closing
// stretch, as its sources share one allowance, they cancel out. So the
// error counted is that of each such group's sum, as the error of as
// many independent sources (the sum's over the square root of their
// number). A burst, such as a backlog read at once, counts as three
// times the usual error at most (or the square root of the passes
// expected, a count's own noise, when that is more). The misses of spans
// inside the closing stretch also teach closeErr, the error of its
// estimates, faster: the stretch lasts seconds. peerErr averages the last
// 16 errors or so, plainly until 16 are known: an average that started
// from 0 would take a node that has just started for one whose estimates
// do not err, and its hard stop would keep next to no margin through its
// first seconds.
func (c *Controller) learnErr() {
	ms := c.misses
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Compare(a.at, b.at) })
	for i := 0; i < len(ms); {
		j, pred, d, closing := i, 0.0, 0.0, true
		for ; j < len(ms) && ms[j].at == ms[i].at; j++ {
			pred, d = pred+ms[j].pred, d+ms[j].d
			closing = closing && ms[j].from >= c.closeAt
		}
		k := float64(j - i)
		e := min(math.Abs(d), 3*max(c.peerErr*math.Sqrt(k), math.Sqrt(max(pred, 0))+1)) / math.Sqrt(k)
		for ; i < j; i++ {
			c.errN = min(c.errN+1, 16)
			c.peerErr += (e - c.peerErr) / c.errN
			if closing {
				c.closeN++
				c.closeErr += (e - c.closeErr) / min(c.closeN, 4)
			}
		}
	}
	c.misses = ms[:0]
}
