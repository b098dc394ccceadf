package flow

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// params is what the hot path reads: replaced whole, atomically, on every
// tune.
type params struct {
	begin, end int64 // events outside [begin, end) are rejected
	period     int64 // the period p and cut were tuned for
	p, cut     float64
	nextP      float64 // for lanes that already entered the next period
	nextCut    float64
	exhausted  bool
	// cold: the controller has not measured any traffic yet. Lanes then
	// pass at coldRate per second each (the ideal rate over this node's
	// share, split across its lanes), so that a backlog met at start is
	// neither rejected wholesale nor passed wholesale.
	cold      bool
	coldRate  float64
	coldBurst float64
}

// Controller paces one budget on one node. Its lanes decide; the
// controller re-tunes them from their counters and from peers' reports.
// All methods are safe for concurrent use; lanes are not (one goroutine
// each).
type Controller struct {
	b      Budget
	cfg    *config
	sched  schedule
	parent *Controller
	params atomic.Pointer[params]

	mu    sync.Mutex
	lanes map[string]*Lane
	peers map[string]*peer
	// the same, in a stable order, so that sums (and so simulations) are
	// deterministic
	laneList  []*Lane
	peerList  []*peer
	hist      ownHistory
	sk        *sketch
	conv      *conversion
	share     float64
	warmUntil int64 // until then, fill in sources not heard from yet
	rewarm    bool

	// smoothed quantities of seed 000
	steady     float64 // smoothed cluster rate of scored budgets
	steadyAt   int64
	proportion float64 // local traffic proportion
	idealRate  float64 // ideal pass rate
	tuned      bool
	snap       Snapshot
}

// peer is the controller's memory of a source another node owns.
type peer struct {
	source                     string
	rep                        Report
	at                         int64
	offRate, passRate, rewRate float64 // per second, from its last reports
	rateKnown                  bool
}

// ownHistory is a ring of the node's own cumulative counts at each tune,
// from which the local rate and the local pass fraction over any recent
// span are read.
type ownHistory struct {
	t        [64]int64
	off, pas [64]float64
	n, head  int
}

func (h *ownHistory) add(t int64, off, pas float64) {
	if h.n > 0 && h.t[(h.head+63)%64] >= t {
		i := (h.head + 63) % 64
		h.off[i], h.pas[i] = off, pas
		return
	}
	h.t[h.head], h.off[h.head], h.pas[h.head] = t, off, pas
	h.head = (h.head + 1) % 64
	if h.n < 64 {
		h.n++
	}
}

// at interpolates the counts at t (clamped to the ring's span).
func (h *ownHistory) at(t int64) (off, pas float64) {
	if h.n == 0 {
		return 0, 0
	}
	newest := (h.head + 63) % 64
	if t >= h.t[newest] {
		return h.off[newest], h.pas[newest]
	}
	for k := 1; k < h.n; k++ {
		i := (h.head + 63 - k) % 64
		if h.t[i] <= t {
			j := (i + 1) % 64
			f := float64(t-h.t[i]) / float64(h.t[j]-h.t[i])
			return h.off[i] + f*(h.off[j]-h.off[i]), h.pas[i] + f*(h.pas[j]-h.pas[i])
		}
	}
	oldest := (h.head + 64 - h.n) % 64
	return h.off[oldest], h.pas[oldest]
}

func (h *ownHistory) oldest() int64 { return h.t[(h.head+64-h.n)%64] }

func newController(b Budget, cfg *config) *Controller {
	c := &Controller{
		b:     b,
		cfg:   cfg,
		sched: newSchedule(b),
		lanes: map[string]*Lane{},
		peers: map[string]*peer{},
		share: cfg.priorShare,
	}
	if b.Scored {
		c.sk = &sketch{}
		c.sk.init()
	}
	if b.Rewards {
		c.conv = newConversion(240)
	}
	prm := &params{begin: math.MinInt64, end: c.sched.hardEnd, cut: math.Inf(1), nextCut: math.Inf(1), cold: true}
	if !b.Begin.IsZero() {
		prm.begin = b.Begin.UnixNano()
	}
	c.params.Store(prm)
	return c
}

// Budget returns the controller's budget.
func (c *Controller) Budget() Budget { return c.b }

// open creates the lane of a source, restoring its counters from r.
func (c *Controller) open(source string, t int64, r *Report) *Lane {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &Lane{c: c, source: source, since: t, periodEnd: math.MaxInt64}
	if c.b.Scored {
		l.sk = newLaneSketch()
	}
	l.credit = 0.5
	if r != nil {
		l.since = r.Since.UnixNano()
		l.offered.Store(r.Total.Offered)
		l.passed.Store(r.Total.Passed)
		l.rewards.Store(math.Float64bits(r.Total.Rewards))
		l.period.Store(r.Period)
		l.baseOff.Store(r.Total.Offered - r.InPeriod.Offered)
		l.basePass.Store(r.Total.Passed - r.InPeriod.Passed)
		l.baseRew.Store(math.Float64bits(r.Total.Rewards - r.InPeriod.Rewards))
		l.seenOff, l.seenPass, l.seenRew = r.Total.Offered, r.Total.Passed, r.Total.Rewards
	}
	if c.sched.periodic {
		idx := l.period.Load()
		if r == nil {
			idx, _, _ = c.sched.period(t)
			l.period.Store(idx)
		}
		l.periodEnd = c.sched.anchor + (idx+1)*c.sched.length
	}
	l.coldAt, l.coldTokens = t, 1
	c.lanes[source] = l
	c.laneList = append(c.laneList, l)
	c.dropPeer(source)
	if old := c.params.Load(); old.cold {
		prm := *old
		prm.coldRate, prm.coldBurst = c.coldRate()
		c.params.Store(&prm)
	}
	return l
}

// close stops counting a lane; its last report stands for the source until
// a new owner publishes.
func (c *Controller) close(l *Lane, t int64) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := l.report(t)
	l.closed = true
	if c.lanes[l.source] == l {
		delete(c.lanes, l.source)
		for i, x := range c.laneList {
			if x == l {
				c.laneList = append(c.laneList[:i], c.laneList[i+1:]...)
				break
			}
		}
		c.addPeer(&peer{source: l.source, rep: r, at: t})
	}
	return r
}

func (c *Controller) addPeer(p *peer) {
	c.dropPeer(p.source)
	c.peers[p.source] = p
	c.peerList = append(c.peerList, p)
}

func (c *Controller) dropPeer(source string) {
	p, ok := c.peers[source]
	if !ok {
		return
	}
	delete(c.peers, source)
	for i, x := range c.peerList {
		if x == p {
			c.peerList = append(c.peerList[:i], c.peerList[i+1:]...)
			return
		}
	}
}

func (c *Controller) reports(t int64, dst []Report) []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.laneList {
		dst = append(dst, l.report(t))
	}
	return dst
}

// sync takes in peers' latest reports, then re-tunes.
func (c *Controller) sync(t int64, reps []Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range reps {
		if _, own := c.lanes[r.Source]; own {
			continue
		}
		at := r.At.UnixNano()
		p := c.peers[r.Source]
		if p == nil {
			p = &peer{source: r.Source}
			c.addPeer(p)
			if s := r.Since.UnixNano(); at-s >= int64(c.cfg.tune) {
				dt := float64(at-s) / 1e9
				p.offRate = float64(r.Total.Offered) / dt
				p.passRate = float64(r.Total.Passed) / dt
				p.rewRate = r.Total.Rewards / dt
				p.rateKnown = true
			}
		} else if at > p.at {
			if dt := float64(at-p.at) / 1e9; at-p.at >= int64(c.cfg.tune)/2 {
				p.offRate = float64(r.Total.Offered-p.rep.Total.Offered) / dt
				p.passRate = float64(r.Total.Passed-p.rep.Total.Passed) / dt
				p.rewRate = (r.Total.Rewards - p.rep.Total.Rewards) / dt
				p.rateKnown = true
			}
		} else {
			continue // not newer than what we have
		}
		p.rep, p.at = r, at
	}
	c.tuneLocked(t, true)
}

func (c *Controller) tune(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tuneLocked(t, false)
}

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
	peersKnown      bool
}

func (c *Controller) estimate(t int64) estimate {
	if c.rewarm || !c.tuned {
		c.rewarm = false
		c.warmUntil = t + 2*int64(c.cfg.sync) + int64(c.cfg.staleAfter)
	}
	var e estimate
	e.period, e.start, e.end = c.sched.period(t)

	// Own lanes: exact.
	var accOff, accPass float64
	for _, l := range c.laneList {
		total, in, _ := l.counts(e.period)
		// deltas since the last look feed the own history (restored
		// counters are not new traffic)
		accOff += float64(total.Offered - l.seenOff)
		accPass += float64(total.Passed - l.seenPass)
		l.seenOff, l.seenPass, l.seenRew = total.Offered, total.Passed, total.Rewards
		e.offered += float64(in.Offered)
		e.passed += float64(in.Passed)
		e.rewards += in.Rewards
		e.totalPassed += float64(total.Passed)
		e.totalRewards += total.Rewards
		if c.sk != nil {
			c.sk.merge(l.sk)
		}
	}
	prevOff, prevPass := 0.0, 0.0
	if c.hist.n > 0 {
		newest := (c.hist.head + 63) % 64
		prevOff, prevPass = c.hist.off[newest], c.hist.pas[newest]
	}
	c.hist.add(t, prevOff+accOff, prevPass+accPass)

	// Own offered rate over the last sync interval (or what we have).
	from := max(t-int64(c.cfg.sync), c.hist.oldest())
	if from < t {
		o0, _ := c.hist.at(from)
		o1, _ := c.hist.at(t)
		e.ownRate = (o1 - o0) / (float64(t-from) / 1e9)
	}

	// Peers: reported, extrapolated while fresh.
	stale := int64(c.cfg.staleAfter)
	knownRate, known := e.ownRate, 0
	for _, p := range c.peerList {
		fresh := t-p.at <= stale
		e.totalPassed += float64(p.rep.Total.Passed)
		e.totalRewards += p.rep.Total.Rewards
		var base Counters
		from := p.at
		switch {
		case p.rep.Period == e.period:
			base = p.rep.InPeriod
		case p.rep.Period < e.period:
			from = max(p.at, e.start)
		default:
			continue // a clock ahead of ours: ignore until we catch up
		}
		e.offered += float64(base.Offered)
		e.passed += float64(base.Passed)
		e.rewards += base.Rewards
		if !fresh {
			continue
		}
		if p.rateKnown && p.rep.Total.Offered > 0 {
			knownRate += p.offRate
			known++
		}
		if t <= from {
			continue
		}
		dt := float64(t-from) / 1e9
		e.offered += p.offRate * dt
		e.rewards += p.rewRate * dt
		e.totalRewards += p.rewRate * float64(t-p.at) / 1e9
		passes := p.passRate * dt
		// Peers run the same controller: their pass fraction since the
		// report follows ours, which we know exactly.
		if o0, p0 := c.hist.at(from); c.hist.oldest() <= from {
			o1, p1 := c.hist.at(t)
			if o1-o0 >= 1 {
				passes = p.offRate * dt * (p1 - p0) / (o1 - o0)
			}
		}
		e.passed += passes
		e.totalPassed += passes * float64(t-p.at) / float64(t-from)
	}
	// The cluster rate is the sum of the known sources' rates. While some
	// are not known yet (the first syncs after a start or a rebalance), or
	// when no peer is heard at all (the exchange is down), the unknown
	// sources are assumed to carry the average of the known ones, counting
	// this node as holding its share of the cluster.
	e.peersKnown = known > 0
	e.rate = knownRate
	own := 1.0 / c.share
	if t < c.warmUntil || known == 0 {
		if n := float64(known + 1); n < own {
			e.rate = knownRate * own / n
		}
	}
	return e
}

// tuneLocked re-computes the working pass rate (and score cut) at t.
func (c *Controller) tuneLocked(t int64, synced bool) {
	e := c.estimate(t)
	old := c.params.Load()
	prm := &params{begin: old.begin, end: old.end, period: e.period}

	achieved, conv, lead := e.passed, 1.0, int64(0)
	if c.conv != nil {
		if !c.tuned && e.totalPassed == 0 {
			c.conv.add(t, 0, 0)
		}
		if synced {
			c.conv.add(t, e.totalPassed, e.totalRewards)
			c.conv.fit(int64(c.cfg.maxDelay))
		}
		if c.conv.ratio > 0 {
			conv, lead = c.conv.ratio, c.conv.delay
		}
		// Rewards still to come from passes made within the delay.
		inflight := e.totalPassed - c.conv.passedAt(t-lead)
		if lead == 0 || inflight < 0 {
			inflight = 0
		}
		achieved = e.rewards + conv*inflight
	}

	T := c.b.Target
	endEff := e.end - c.sched.reserve
	// Passes lead the curve they are judged on by the reward delay. Reward
	// budgets lead by twice the delay: they aim to be done one delay early,
	// then top up from the rewards actually seen, so that few rewards are
	// still in flight (and uncertain) when the window closes.
	tt := t + 2*lead
	var q float64 // wanted cluster pass rate, per second
	switch {
	case achieved >= T:
		prm.exhausted = true
	case tt < endEff:
		h := min(c.accel(e.start, endEff), endEff-tt)
		goal := c.sched.ideal(tt+h, e.start, e.end)
		if lead > 0 {
			// Rewards in flight are random (binomial); stop the main
			// phase two standard deviations short, and top up after.
			inflight := T / (float64(endEff-e.start) / 1e9) * (float64(lead) / 1e9)
			goal = min(goal, T-2*math.Sqrt(inflight))
		}
		q = (goal - achieved) / (float64(h) / 1e9) / conv
	case t+lead < e.end:
		rest := max(e.end-t-lead, int64(c.cfg.tune))
		q = (T - achieved) / (float64(rest) / 1e9) / conv
	default:
		// a reward for a pass now would arrive after the window: none
	}
	span := float64(endEff-e.start) / 1e9
	rate := e.rate
	if c.sk != nil {
		rate = c.steadyRate(t, rate)
	}
	if rate > 0 {
		prm.p = clamp01(q / rate)
		prm.nextP = clamp01(T / span / conv / rate)
	} else {
		// No traffic measured (a start, or lanes just opened on an idle
		// node): lanes pass at the ideal rate until the next tune.
		prm.cold = true
		prm.coldRate, prm.coldBurst = c.coldRate()
	}
	if prm.exhausted {
		prm.p = 0
	}
	prm.cut, prm.nextCut = math.Inf(1), math.Inf(1)
	if c.sk != nil {
		c.sk.decay(math.Exp2(-float64(c.cfg.tune) / float64(c.cfg.scoreMemory)))
		prm.cut = c.consensusCut(c.sk.upper(prm.p), t, e.period)
		prm.nextCut = c.sk.upper(prm.nextP)
	}
	c.params.Store(prm)

	// Seed 000's smoothed quantities, for the snapshot.
	P := c.cfg.decay
	ideal := 0.0
	if e.rate > 0 {
		ideal = clamp01(T / span / conv / e.rate)
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
	c.tuned = true

	idealNow := c.sched.ideal(t, e.start, e.end)
	slope := T / span
	c.snap = Snapshot{
		Budget:          c.b.Name,
		At:              time.Unix(0, t),
		Period:          e.period,
		Target:          T,
		Ideal:           idealNow,
		ClusterOffered:  e.offered,
		ClusterPassed:   e.passed,
		ClusterRewards:  e.rewards,
		Achieved:        achieved,
		ClusterRate:     e.rate,
		LocalRate:       e.ownRate,
		LocalProportion: c.proportion,
		Conversion:      conv,
		RewardDelay:     time.Duration(lead),
		IdealPassRate:   c.idealRate,
		WorkingPassRate: prm.p,
		Cut:             prm.cut,
		Lag:             idealNow - achieved,
		LagTime:         time.Duration((idealNow - achieved) / slope * 1e9),
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
	for _, p := range c.peerList {
		if t-p.at > int64(c.cfg.staleAfter) || p.rep.Period != period ||
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
	case c.steady <= 0 || r <= 0 || t < c.warmUntil || math.Abs(r/c.steady-1) > 0.25:
		c.steady = r
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

// Snapshot returns the controller's quantities as of its last tune.
func (c *Controller) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}
