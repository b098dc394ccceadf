package flow

import "math"

// The closing stretch. Over most of a window a node passes a working
// fraction of its events, and estimates what its peers passed since their
// last reports from their traffic and its own fraction. Traffic that
// jitters from second to second makes both uncertain: a peer's traffic
// since its report is its last known rate give or take the jitter, and
// each node divides the wanted rate by a cluster rate made of its own
// fresh traffic and its peers' older rates, so nodes pass at fractions
// that differ as much as their pictures do. That error is made up over the
// acceleration horizon during the window, but not at its end: what the
// last decisions get wrong is the final error.
//
// Over the closing stretch (the last two report ages of the window) an
// unscored pass budget is paced by rate instead: each node passes its part
// of the wanted cluster rate, its smoothed traffic over the cluster's, as
// an allowance carried from tune to tune, its working fraction raised to
// 1 so that the allowance alone paces it. What a peer passed since its
// report is then its part of what the wanted rate asked over that span,
// known whatever its traffic did: a node with less traffic than usual
// passes a larger fraction of it. The parts are read from every source's
// reports as of an instant all nodes have them (so that they agree and add
// up to one), and the stretch begins only when the cluster's traffic held
// steady over the seconds they are read from (a stall and the backlog
// after it leave the node on its working fraction to the end, aiming
// under the ideal curve as in the stretch: see wanted). Its
// estimates being close, the hard stop's margin over it is the error they
// show, and the course aimed at runs half that margin under the ideal
// curve. Scored budgets keep their cut (a rate would pass the first events
// rather than the best), reward budgets their own end, and a budget whose
// last passes one node makes alone its leader.

// rateMemory is how long, in sync intervals, the offered rates that set
// the nodes' parts in the closing stretch are measured over: long enough
// that a part moves little from one report to the next (peers estimate it
// from reports a sync interval old), short enough to follow a node that
// joins or a partition that moves.
const rateMemory = 4

// smoothed is a source's offered rate over a span of its reports, read as
// of an instant that every node agrees on: between the last reports made
// at or before that instant and rateMemory sync intervals before it. Its
// owner takes the source's reports in as the exchange shows them
// (viewOwn), its peers the same reports (take): the node's part and the
// part its peers take it for are read from the same two reports, whatever
// else each saw before or since (a rate smoothed over each node's history
// of reports differs from node to node by what that history held).
type smoothed struct {
	since int64
	marks [12]mark // the last reports' instants and counts, oldest first
	n     int
}

// mark is a report's instant and offered count.
type mark struct {
	at  int64
	off uint64
}

// add takes in the source's report r. Counts that went back (work rolled
// back) start the marks over, as they do for every node that sees them.
func (w *smoothed) add(r *Report) {
	at, off := r.At.UnixNano(), r.Total.Offered
	if w.n > 0 {
		last := w.marks[w.n-1]
		if at <= last.at {
			return
		}
		if off < last.off {
			w.n = 0
		}
	}
	if w.n == len(w.marks) {
		copy(w.marks[:], w.marks[1:])
		w.n--
	}
	w.marks[w.n] = mark{at, off}
	w.n++
	w.since = r.Since.UnixNano()
}

// rateAt is the offered rate between the last reports made at or before
// cutoff-span and at or before cutoff (the oldest known stands in for a
// report older than any known); from the source's start when there is one
// report only. 0 without reports, and 0 when neither spans a quarter of
// span (a sync interval for rateOf): the first report of a source often
// comes a fraction of a millisecond after its first event (an event, then
// its commit at once), and one event over that instant read as 10,000
// events a second, which the peers then extrapolated.
func (w *smoothed) rateAt(cutoff, span int64) float64 {
	if w.n == 0 {
		return 0
	}
	find := func(at int64) mark {
		for i := w.n - 1; i >= 0; i-- {
			if w.marks[i].at <= at {
				return w.marks[i]
			}
		}
		return w.marks[0]
	}
	b := find(cutoff)
	a := find(cutoff - span)
	least := span / rateMemory
	if b.at-a.at >= least {
		return float64(b.off-a.off) / (float64(b.at-a.at) / 1e9)
	}
	if b.at-w.since >= least {
		return float64(b.off) / (float64(b.at-w.since) / 1e9)
	}
	return 0
}

// partsAt is the instant as of which the parts of the closing stretch
// are read at t: on the grid of sync intervals, a sync interval and the
// exchange's lateness (rounded up to a sync interval) before t, so that
// every node has the reports made up to it, and all read the same ones.
func (c *Controller) partsAt(t int64) int64 {
	sync := int64(c.cfg.sync)
	d := (sync + c.lateness + sync - 1) / sync * sync
	return (t - sync - d) / sync * sync
}

// steadyRatio bounds how much the cluster's traffic may have moved before
// the parts' instant for the closing stretch to begin: parts read from
// traffic that moved that much (a stall, and the backlog read after it) do
// not say how it is spread now.
const steadyRatio = 3

// settled reports whether the cluster's traffic held within steadyRatio
// over each sync interval of the two spans of rateMemory sync intervals up
// to the parts' instant, and since (rate, the cluster rate now). It reads
// what every node has, or nearly, so that the nodes decide alike: a node
// pacing by rate among nodes pacing by fraction is taken by them to pass
// at their fraction, and passes its part instead.
func (c *Controller) settled(t int64, rate float64) bool {
	sync := int64(c.cfg.sync)
	// A source counts for a second only if it reported within two sync
	// intervals before its end: over a gap in its reports (an outage of
	// the broker, during which no worker publishes) its rate would read
	// as its average since its start, which hides the stall.
	lo, hi := rate, rate
	for k := int64(0); k < 2*rateMemory; k++ {
		at, r := c.partsFrom-k*sync, 0.0
		for _, l := range c.laneList {
			r += l.view.rateWithin(at, sync, 2*sync)
		}
		for _, p := range c.peerList {
			if t-p.at <= c.stale() {
				r += p.smooth.rateWithin(at, sync, 2*sync)
			}
		}
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo > 0 && hi < steadyRatio*lo
}

// rateWithin is rateAt(at, span), or 0 when no report was made within gap
// before at (the source was not heard from then, or had not begun).
func (w *smoothed) rateWithin(at, span, gap int64) float64 {
	for i := w.n - 1; i >= 0; i-- {
		if w.marks[i].at <= at {
			if at-w.marks[i].at > gap {
				return 0
			}
			return w.rateAt(at, span)
		}
	}
	return 0
}

// rateOf is a source's offered rate over the rateMemory sync intervals up
// to at (see smoothed).
func (c *Controller) rateOf(w *smoothed, at int64) float64 {
	return w.rateAt(at, rateMemory*int64(c.cfg.sync))
}

// closingSpan is how long before the end of the period the closing
// stretch begins: two report ages (a sync interval and the exchange's
// lateness), so that the last decisions' estimates reach back no further
// than its start, and no more than a tenth of the period.
func (c *Controller) closingSpan(e *estimate) int64 {
	w := 2 * (int64(c.cfg.sync) + c.lateness)
	return min(w, (e.end-c.sched.reserve-e.start)/10)
}

// lastReports reports whether t falls in the last closingSpan of an
// unscored pass budget's period, where it aims under the ideal curve
// (wanted) and may pace by rate (closing).
func (c *Controller) lastReports(t int64, e *estimate) bool {
	return c.sk == nil && c.conv == nil && t >= e.end-c.sched.reserve-c.closingSpan(e)
}

// closing reports whether the tune at t paces by rate: an unscored pass
// budget in its closing stretch, with its peers known and its parts
// measured. It records when the stretch began, for the estimates of the
// peers' passes.
func (c *Controller) closing(t int64, e *estimate) bool {
	if !c.lastReports(t, e) || c.b.Delay || c.single || !(c.ownSmooth > 0) ||
		!e.peersKnown || t < c.warmUntil || !(c.clusterRate > 0) || t >= e.end {
		return false
	}
	if c.closeAt == math.MaxInt64 {
		if !c.settled(t, e.rate) {
			return false
		}
		c.closeAt, c.closeErr, c.closeN = t, 0, 0
	}
	return true
}

// closingAllowance paces the node by rate in the closing stretch: its part
// of the wanted cluster rate q, from tokens carried over from the last
// allowance (at most a tune interval's worth: a node that could not pass
// its part does not pass it later in a burst), never past limit passes.
func (c *Controller) closingAllowance(t int64, q, limit float64, prm *params) {
	rate := max(q, 0) * c.ownSmooth / c.clusterRate
	carry := 0.0
	if old := c.params.Load().allow; old != nil && old.closing {
		carry = old.free + old.burst + old.fill(t) - float64(old.used.Load())
		carry = min(max(carry, 0), max(1, rate*c.cfg.tune.Seconds()))
	}
	if q > 0 && !prm.exhausted {
		prm.p = 1
	}
	prm.allow = &allowance{limit: int64(max(limit, 0)), from: t, burst: carry, rate: rate / 1e9, upto: c.cfg.frozen(), closing: true}
}

// closingPasses estimates what peer source p passed over [from, t] of the
// closing stretch: its part of the passes the wanted cluster rate asked
// for over the span (from the own history), its part being its smoothed
// rate over the cluster's, both as of the parts' instant.
func (c *Controller) closingPasses(p *peer, from, t int64) float64 {
	a, b := c.hist.at(from), c.hist.at(t)
	return (b.want - a.want) * c.rateOf(&p.smooth, c.partsFrom) / c.clusterRate
}

// viewOwn takes in the exchange's report of an own source, as its peers
// take it in (see smoothed).
func (c *Controller) viewOwn(l *Lane, r *Report) {
	l.view.add(r)
}
