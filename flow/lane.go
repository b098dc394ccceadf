package flow

import (
	"math"
	"sync/atomic"
	"time"
)

// Reason says why an event was rejected, or that it passed.
type Reason uint8

// The reasons a Decide can give.
const (
	ReasonPass       Reason = iota // passed every level
	ReasonPaced                    // over the working pass rate
	ReasonScore                    // score below the current cut
	ReasonExhausted                // the budget (or its current period) is spent
	ReasonNotStarted               // before the window begins
	ReasonEnded                    // after the window ends
	ReasonDelayed                  // a delay budget: retry at Lane.RetryAt
)

var reasonNames = [...]string{"pass", "paced", "score", "exhausted", "not-started", "ended", "delayed"}

// String returns the reason as used in headers and metric labels.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Verdict is the answer for one event.
type Verdict struct {
	Pass   bool
	Reason Reason
	By     string // the budget that rejected the event; "" on a pass
}

// Lane is one source's (one partition's) door into one budget: the hot path.
// A Lane must be used by one goroutine at a time (the goroutine of its
// Source); it takes no lock, and the controller reads its counters with
// atomic loads, so many lanes of one controller decide in parallel without
// contention.
//
// Lanes come from Source.Lane or Source.Get; there is no useful zero value.
// A lane closed by its source (Source.Release, Source.Refresh after its
// budget was deleted, Tree.Close) still answers, with the last parameters
// its controller published, but counts for nobody: take the lane from the
// source again.
type Lane struct {
	c      *Controller
	parent *Lane
	src    *Source
	last   int64 // the last event's instant (Source.Release)
	dirty  bool  // counters changed since Source.Changed listed them

	// Counters, written only by the lane's goroutine (load+store, no
	// read-modify-write needed) and read by the controller.
	offered, passed atomic.Uint64
	rewards         atomic.Uint64 // float64 bits
	period          atomic.Int64
	baseOff         atomic.Uint64 // totals when the current period began
	basePass        atomic.Uint64
	baseRew         atomic.Uint64 // float64 bits

	// Owned by the lane's goroutine.
	coldAt     int64      // cold-start token bucket: last refill
	coldTokens float64    // and its tokens
	coldPass   bool       // the pending pass was let through by it
	cutPass    bool       // the pending pass was let through by the score cut
	allowed    *allowance // the pending pass was taken from this allowance
	credit     float64
	periodEnd  int64
	sk         *laneSketch
	sched      *schedule // the schedule periodEnd was computed by
	gen        uint64    // the controller's definition the lane follows
	retryAt    int64     // delay budgets: when the last delayed event may pass
	source     string
	since      int64
	pending    bool  // listed, not yet Published (or Unpublished)
	kids       int32 // open lanes of this source whose parent this is
	idx        int   // in the source's list of open lanes

	// Owned by the controller (under its mutex).
	seenOff, seenPass uint64
	seenRew           float64
	closed            bool
	view              smoothed // the source's offered rate as the exchange shows it (closing.go)

	_ [64]byte // keep neighbouring lanes off this cache line
}

// Decide decides one event of this lane's budget with the given score
// (ignored unless a budget on the way up is scored): it passes only if every
// level of the budget tree lets it through. now is the event's processing
// time.
func (l *Lane) Decide(now time.Time, score float64) Verdict {
	return l.decide(now.UnixNano(), score)
}

func (l *Lane) decide(t int64, score float64) Verdict {
	if prm := l.c.params.Load(); prm.delay {
		return l.decideDelay(t, prm)
	}
	for x := l; x != nil; x = x.parent {
		if r := x.want(t, score); r != ReasonPass {
			for y := l; y != x; y = y.parent {
				y.unwant()
			}
			return Verdict{Reason: r, By: x.c.name}
		}
	}
	for x := l; x != nil; x = x.parent {
		x.take()
	}
	return Verdict{Pass: true}
}

// want counts the event as offered and says whether this level would pass it.
func (l *Lane) want(t int64, score float64) Reason {
	prm := l.c.params.Load()
	if t >= l.periodEnd {
		l.roll(t, prm.sched)
	}
	// Events outside the window count as offered too: the controller
	// knows the traffic (and its scores) when the window opens.
	l.offered.Store(l.offered.Load() + 1)
	l.touch(t)
	if l.sk != nil && score == score { // NaN is never counted
		l.sk.add(score)
	}
	if t < prm.begin {
		return ReasonNotStarted
	}
	if t >= prm.end {
		return ReasonEnded
	}
	p, cut := prm.p, prm.cut
	inPeriod := l.period.Load() == prm.period
	switch {
	case !inPeriod:
		// The lane entered a period the controller has not tuned for yet.
		p, cut = prm.nextP, prm.nextCut
	case prm.exhausted:
		return ReasonExhausted
	case t > prm.until && !prm.cold && t > l.c.tree.alive.Load():
		// The tuner is late: pace at the ideal fraction, no catch-up. (A
		// controller it skips because its lanes were idle keeps its
		// parameters while the tuner runs: see Tree.Tune.)
		p, cut = prm.nextP, prm.nextCut
	}
	if prm.cold {
		// No traffic measured yet: a token bucket at the lane's share of
		// the ideal rate.
		if t > l.coldAt {
			l.coldTokens = min(l.coldTokens+prm.coldRate*float64(t-l.coldAt)/1e9, prm.coldBurst)
			l.coldAt = t
		}
		if l.coldTokens < 1 {
			return ReasonPaced
		}
		l.coldPass = true
		return ReasonPass
	}
	if l.sk != nil && prm.scored {
		if !(score >= cut) { // NaN never passes a cut
			return ReasonScore
		}
		l.cutPass = true
		return l.allow(t, prm, inPeriod)
	}
	l.credit += p
	if l.credit < 1 {
		return ReasonPaced
	}
	return l.allow(t, prm, inPeriod)
}

// allow takes the pass this level wants from the node's allowance;
// inPeriod: the lane is in the period the allowance was tuned for.
func (l *Lane) allow(t int64, prm *params, inPeriod bool) Reason {
	if a := prm.allow; a != nil {
		if !a.take(t, inPeriod) {
			l.unwant()
			return ReasonPaced
		}
		l.allowed = a
	}
	return ReasonPass
}

// unwant: this level would have passed, a level above refused. Keep the
// credit (the next event is wanted again) but do not let it pile up.
func (l *Lane) unwant() {
	l.coldPass = false
	l.cutPass = false
	if l.allowed != nil {
		l.allowed.give()
		l.allowed = nil
	}
	if l.credit > 1 {
		l.credit = 1
	}
}

// take commits a pass.
func (l *Lane) take() {
	l.passed.Store(l.passed.Load() + 1)
	l.allowed = nil
	if l.coldPass {
		l.coldPass = false
		l.coldTokens--
		return
	}
	if l.cutPass {
		l.cutPass = false
		return
	}
	l.credit--
}

// roll moves the lane into the period holding t of schedule s.
func (l *Lane) roll(t int64, s *schedule) { l.moveTo(t, s, false) }

// moveTo puts the lane in the period of s holding t. With keep, or when s
// is a window (a budget redefined from a period budget, met before the
// lane adapted), the counts of the period the lane was in carry over.
func (l *Lane) moveTo(t int64, s *schedule, keep bool) {
	l.sched = s
	if !s.periodic {
		l.period.Store(0)
		l.periodEnd = math.MaxInt64
		return
	}
	idx, _, end := s.period(t)
	if !keep {
		l.baseOff.Store(l.offered.Load())
		l.basePass.Store(l.passed.Load())
		l.baseRew.Store(l.rewards.Load())
	}
	l.period.Store(idx)
	l.periodEnd = end
}

// Reward reports value (e.g. 1 for one click) converted from this budget's
// passes, counted on this lane's source. It feeds reward budgets; for other
// budgets it is only counted.
func (l *Lane) Reward(now time.Time, value float64) {
	t := now.UnixNano()
	if t >= l.periodEnd {
		l.roll(t, l.c.params.Load().sched)
	}
	l.rewards.Store(math.Float64bits(math.Float64frombits(l.rewards.Load()) + value))
	l.touch(t)
}

// touch notes an event at t: for Source.Release, for Source.Changed, and
// for the tree's next visit (Tree.Tune) of the lane's controller and its
// ancestors (traffic under a budget keeps it tuned, even when a child
// rejects it before it reaches the budget's own lane).
func (l *Lane) touch(t int64) {
	l.last = t
	if !l.dirty {
		l.src.changed(l)
	}
	if !l.c.busy.Load() {
		for x := l; x != nil; x = x.parent {
			x.c.markBusy()
		}
	}
}

// Source is the name of the lane's source.
func (l *Lane) Source() string { return l.source }

// Budget is the lane's budget name.
func (l *Lane) Budget() string { return l.c.name }

// counts reads the lane's totals and its counts in period idx (zero when
// the lane has not reached that period yet).
func (l *Lane) counts(idx int64) (total, in Counters, lp int64) {
	lp = l.period.Load()
	total = Counters{
		Offered: l.offered.Load(),
		Passed:  l.passed.Load(),
		Rewards: math.Float64frombits(l.rewards.Load()),
	}
	if lp != idx {
		return total, Counters{}, lp
	}
	in = Counters{
		Offered: total.Offered - l.baseOff.Load(),
		Passed:  total.Passed - l.basePass.Load(),
		Rewards: total.Rewards - math.Float64frombits(l.baseRew.Load()),
	}
	return total, in, lp
}

// report builds the lane's report at t; the caller holds the
// controller's mutex.
func (l *Lane) report(t int64) Report {
	lp := l.period.Load()
	total, in, _ := l.counts(lp)
	r := Report{
		Budget:   l.c.name,
		Source:   l.source,
		At:       time.Unix(0, t),
		Since:    time.Unix(0, l.since),
		Total:    total,
		Period:   lp,
		InPeriod: in,
		Cut:      l.c.params.Load().cut,
	}
	if m := l.c.conv; m != nil && m.ratio > 0 {
		// under the controller's mutex, as every caller holds it
		r.Conversion, r.RewardDelay = m.ratio, time.Duration(m.delay)
	}
	return r
}
