package flow

import (
	"math"
	"sync/atomic"
	"time"
)

// Delay budgets (Budget.Delay) follow tower's RateLimit across a
// cluster: at most Target passes per Period, and an event over the limit
// waits for the next period instead of being rejected.
//
// Each node holds an allowance for the current period: its share of the
// cluster's sources (Tree.SetShare) times Target, rounded down. The shares
// of the nodes add up to one, so the cluster passes at most Target per
// period without any exchange inside the period, and, when every node has
// a backlog, nearly exactly Target (less the rounding, under one pass per
// node). The node's lanes take from the allowance with one atomic add per
// event; the first lane to enter a period opens it.
//
// Two cases cannot assume that every node starts the period with a full
// allowance, so they take their share of what is left instead, read from
// the peers' latest reports (the counters exchanged every sync interval):
//
//   - the node's first period (a start or a restart in the middle of a
//     period): allowance = share × (Target − the cluster's passes so far);
//   - a change of share in the middle of a period (a rebalance): the
//     allowance becomes what the node has used plus its new share of what
//     the cluster has left, if that is less; a share that grew waits for
//     the next period.
//
// Passes peers made since their last report are estimated at their last
// pass rate; an error there can only matter in the period of a start or a
// rebalance. Steady periods cannot pass more than Target.
//
// A delayed event is not counted as offered: it will be offered again.

// quota is one node's allowance of a delay budget in one period, shared by
// the node's lanes of the budget.
type quota struct {
	period int64
	share  float64 // the share allow was computed from (under Controller.mu)
	gen    uint64  // the budget definition it was computed for
	allow  atomic.Int64
	used   atomic.Int64
}

// decideDelay is Decide for a delay budget.
func (l *Lane) decideDelay(t int64, prm *params) Verdict {
	c := l.c
	l.last = t // a delayed event is not counted, but the lane is in use
	delayed := Verdict{Reason: ReasonDelayed, By: c.name}
	if t < prm.begin {
		l.retryAt = prm.begin
		return delayed
	}
	if t >= l.periodEnd {
		l.roll(t, prm.sched)
	}
	idx := l.period.Load()
	q := c.quota.Load()
	if q == nil || q.period < idx {
		q = c.openQuota(idx, t)
	}
	if q.period != idx {
		// Another lane of this node already entered a later period: this
		// lane's instant is behind; it may retry at once.
		l.retryAt = t
		return delayed
	}
	if q.used.Add(1) > q.allow.Load() {
		q.used.Add(-1)
		l.retryAt = l.periodEnd
		return delayed
	}
	l.offered.Store(l.offered.Load() + 1)
	l.passed.Store(l.passed.Load() + 1)
	l.touch(t)
	return Verdict{Pass: true}
}

// RetryAt returns when the event this lane last answered ReasonDelayed for
// may be offered again: the end of the period whose allowance it found
// spent (the next refill), Begin for an event before the budget begins, or
// the event's own instant when the lane was behind the node's period. It
// is meaningful only right after such an answer, from the lane's goroutine.
func (l *Lane) RetryAt() time.Time { return time.Unix(0, l.retryAt) }

// openQuota opens the node's allowance for period idx, unless a lane did
// already (or entered a later one), and returns the current allowance.
func (c *Controller) openQuota(idx, t int64) *quota {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.quota.Load()
	if old != nil && old.period >= idx {
		return old
	}
	q := &quota{period: idx, share: c.share, gen: c.gen}
	left := c.b.Target
	if old == nil {
		left -= c.passedIn(idx, t)
	}
	q.allow.Store(shareOf(c.share, left))
	c.quota.Store(q)
	return q
}

// retuneQuota re-computes the allowance of the current period when the
// node's share changed since it was opened: what it used plus its new share
// of what the cluster has left, but never more than it had (the nodes whose
// share fell may not have reported their last passes yet; a share that grew
// takes effect at the next period). Called under c.mu.
func (c *Controller) retuneQuota(t, idx int64) {
	q := c.quota.Load()
	if q != nil && q.gen != c.gen {
		// The budget was redefined (Tree.Update): its periods may be
		// numbered differently now. The next event opens the period
		// afresh, as a node's first: its share of what is left.
		c.quota.Store(nil)
		return
	}
	if q == nil || q.period != idx || q.share == c.share {
		return
	}
	q.share = c.share
	q.allow.Store(min(q.allow.Load(), q.used.Load()+shareOf(c.share, c.b.Target-c.passedIn(idx, t))))
}

// passedIn estimates the cluster's passes in period idx at t: this node's
// lanes, each peer source's last report of that period, and what a fresh
// peer source passed since, at its last known pass rate. Called under c.mu.
func (c *Controller) passedIn(idx, t int64) float64 {
	var n float64
	for _, l := range c.laneList {
		_, in, _ := l.counts(idx)
		n += float64(in.Passed)
	}
	_, start, _ := c.sched.period(t)
	for _, p := range c.peerList {
		from := p.at
		switch {
		case p.rep.Period == idx:
			n += float64(p.rep.InPeriod.Passed)
		case p.rep.Period < idx:
			from = max(p.at, start)
		default:
			continue
		}
		if p.rateKnown && t-p.at <= c.stale() && t > from {
			n += p.passRate * float64(t-from) / 1e9
		}
	}
	return n
}

// shareOf is share × left passes, rounded down: erring low keeps the
// cluster at or under its target.
func shareOf(share, left float64) int64 {
	if !(left > 0) {
		return 0
	}
	return int64(math.Floor(share*left + 1e-9))
}

// Allowance returns this node's allowance of a delay budget in its current
// period and how much of it is used (zero for other budgets, or before the
// first event).
func (c *Controller) Allowance() (period, allow, used int64) {
	q := c.quota.Load()
	if q == nil {
		return 0, 0, 0
	}
	return q.period, q.allow.Load(), q.used.Load()
}
