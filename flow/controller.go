package flow

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// params is what the hot path reads: replaced whole, atomically, on every
// tune.
type params struct {
	// sched is the schedule lanes roll their periods by; replaced (never
	// modified) when the budget is redefined.
	sched      *schedule
	scored     bool  // lanes with a score sketch cut by score
	delay      bool  // a delay budget: lanes take from the node's quota
	begin, end int64 // events outside [begin, end) are rejected
	period     int64 // the period p and cut were tuned for
	p, cut     float64
	// q is the wanted cluster pass rate, per second, the own history
	// integrates (see closingPasses)
	q float64
	// nextP is the ideal fraction without lag correction, for lanes that
	// already entered the next period, and for every lane once until has
	// passed without a new tune (a late tune must not let a catch-up rate
	// run on).
	nextP   float64
	nextCut float64
	until   int64
	// rest: the end of the rest the tune granted (restUntil), plus a tune
	// interval; 0 when none. The parameters stay meant until then.
	rest      int64
	exhausted bool
	// allow, when set, bounds what this node's lanes pass until the next
	// tune (see guard.go).
	allow *allowance
	// cold: the controller has not measured any traffic yet. Lanes then
	// pass at coldRate per second each (the ideal rate over this node's
	// share, split across its lanes), so that a backlog met at start is
	// neither rejected wholesale nor passed wholesale.
	cold      bool
	coldRate  float64
	coldBurst float64
	// silent: traffic was measured in the period, but none over the last
	// sync interval anywhere in the cluster (bursts that follow silence, a
	// pause, a stall before its backlog). Lanes then pass every event the
	// node's allowance lets through, which holds this node's part of the
	// budget's lag behind its ideal curve (see guard.go): a burst is passed
	// as far as the course wants it, whatever its density.
	silent bool
}

// Controller paces one budget on one node. Its lanes decide; the
// controller re-tunes them from their counters and from peers' reports.
//
// A Tree creates a budget's controller when a source of the node opens
// the budget's first lane (or a lane of one of its children), and drops it
// some time after the last lane closed (see Tree); a pointer kept after
// that still answers, frozen. There is no useful zero value. All methods
// are safe for concurrent use; lanes are not (one goroutine each).
type Controller struct {
	name   string // the budget's name, which never changes
	cfg    *config
	tree   *Tree
	params atomic.Pointer[params]
	busy   atomic.Bool           // a lane counted something since the last visit
	quota  atomic.Pointer[quota] // delay budgets: this node's allowance

	// Lifecycle, under the tree's mutex: the definition (nil once deleted
	// or dropped), the index in the tree's active list (-1 when not in
	// it), the instant of the controller's entry in the tree's due queue
	// (math.MaxInt64: none), and whether it waits for the next Sync.
	def     *def
	idx     int
	dueAt   int64
	pending bool
	// Under the tree's visit mutex: the round that last visited it, and
	// whether it was busy then.
	stamp   uint64
	wasBusy bool
	// slack: the last tune found the budget far from binding (slackAfter);
	// a Tune then leaves it to the next Sync. skipped: a Tune did, while
	// it was busy.
	slack   atomic.Bool
	skipped bool
	// rest: until then a round leaves the controller unvisited though
	// busy (restUntil, Tree.hold; 0: no rest). held, under the tree's
	// mutex: a busy visit is held back until rest. syncHeld, under the
	// visit mutex: a Sync held it back (its visit reads the peers).
	rest     atomic.Int64
	held     bool
	syncHeld bool

	mu    sync.Mutex
	b     Budget
	sched schedule
	lsch  *schedule // a copy of sched for lanes (params.sched)
	gen   uint64    // counts redefinitions; lanes adapt when theirs differs
	// srcs: per source, this node's open lane of it or its peer, found
	// with one lookup by the source's name
	srcs map[string]sourceRef
	// the lanes and the peers, in a stable order, so that sums (and so
	// simulations) are deterministic
	laneList  []*Lane
	peerList  []*peer
	spare     *peer // a peer dropped for a lane, for the next one made
	hist      ownHistory
	sk        *sketch
	conv      *conversion
	share     float64
	warmUntil int64 // until then, fill in the rates of sources not heard from yet
	fillUntil int64 // and their counts (the first warm-up only)
	rewarm    bool
	// lateness is how much older than two sync intervals peers' reports
	// grow before the next one is seen (the exchange's delay, and gaps of
	// lost publications): a slowly decaying maximum of what syncs saw. A
	// peer is stale only once its report is older than staleAfter plus
	// this.
	lateness int64
	// down: the last estimate found no peer fresh (the exchange down);
	// upAt: when an estimate last found one fresh again after that
	down   bool
	upAt   int64
	single bool // the last tune found one node at a time to pass (guard.go)
	// The closing stretch (closing.go): the own lanes' smoothed offered
	// rates summed, and the cluster's (with the fresh peers'), as of the
	// last tune; the period whose stretch began at closeAt (MaxInt64:
	// not yet).
	ownSmooth, clusterRate float64
	closePeriod, closeAt   int64
	partsFrom              int64 // the instant the parts are read as of
	// peerErr is the mean error of what a peer was estimated to have
	// passed between two of its reports, as the second one showed, over
	// the last 16 or so (errN: how many, up to 16).
	peerErr, errN float64
	// closeErr: the same, of the estimates made over the closing stretch
	// (closing.go), from closeN misses
	closeErr, closeN float64
	misses           []miss // of the sync under way (learnErr)

	// smoothed quantities of the decentralized cluster limiter
	steady   float64 // smoothed cluster rate of scored budgets
	steadyAt int64
	regimeAt int64 // when the cluster rate last jumped (steadyRate)
	// base: the cluster rate before a crowd (0: none), which had held
	// for baseHeld (crowdLead)
	base       float64
	baseHeld   int64
	proportion float64 // local traffic proportion
	idealRate  float64 // ideal pass rate
	tuned      bool
	snap       Snapshot

	// lifecycle, under mu: the last visit, the last read of the peers,
	// when the last lane closed, and a visit asked for (Tree.SetShare)
	lastVisit, synced, emptySince int64
	tunedAt                       int64 // the last tune (the score sketch decays by the time since)
	born                          int64 // when the tree made it (set once, before any use)
	forced                        bool
}

func newController(b Budget, cfg *config) *Controller {
	c := &Controller{
		name:  b.Name,
		cfg:   cfg,
		srcs:  map[string]sourceRef{},
		share: cfg.priorShare,
		idx:   -1,
		dueAt: math.MaxInt64,
		// closing.go
		closeAt: math.MaxInt64,
	}
	c.define(b)
	prm := &params{cut: math.Inf(1), nextCut: math.Inf(1), cold: true}
	c.params.Store(c.bounds(prm))
	return c
}

// define sets the controller's budget and what derives from it: the
// schedule, the score sketch of scored budgets, the conversion model of
// reward budgets (a sketch or model already there is kept).
func (c *Controller) define(b Budget) {
	c.b = b
	c.sched = newSchedule(b)
	s := c.sched
	c.lsch = &s
	switch {
	case b.Scored && c.sk == nil:
		c.sk = &sketch{}
		c.sk.init()
	case !b.Scored:
		c.sk = nil
	}
	switch {
	case b.Rewards && c.conv == nil:
		c.conv = newConversion(240)
	case !b.Rewards:
		c.conv = nil
	}
}

// bounds sets the fields of prm that follow from the definition alone.
func (c *Controller) bounds(prm *params) *params {
	prm.sched, prm.scored, prm.delay = c.lsch, c.sk != nil, c.b.Delay
	prm.begin, prm.end = math.MinInt64, c.sched.hardEnd
	if !c.b.Begin.IsZero() {
		prm.begin = c.b.Begin.UnixNano()
	}
	return prm
}

// redefine changes the budget (same name) and re-tunes at t from the
// counters the controller already has.
func (c *Controller) redefine(b Budget, t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.define(b)
	c.gen++
	prm := *c.params.Load()
	c.params.Store(c.bounds(&prm))
	c.tuneLocked(t, false)
}

// adapt brings a lane of this controller in line with the controller's
// current definition, from the lane's goroutine (Source.Refresh), and
// reports whether the lane had to change. A lane whose period changed
// shape is re-indexed into the period holding t and keeps the counts of
// the period it was in.
func (c *Controller) adapt(l *Lane, t int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.gen == c.gen {
		return false
	}
	l.gen = c.gen
	switch {
	case c.sk != nil && l.sk == nil:
		l.sk = newLaneSketch()
	case c.sk == nil:
		l.sk = nil
	}
	s := c.lsch
	if l.sched.periodic == s.periodic && l.sched.anchor == s.anchor && l.sched.length == s.length {
		l.sched = s
		return true
	}
	l.moveTo(t, s, true)
	return true
}

// Budget returns the controller's budget.
func (c *Controller) Budget() Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b
}

// Name returns the name of the controller's budget.
func (c *Controller) Name() string { return c.name }

// open creates the lane of a source, restoring its counters from r.
func (c *Controller) open(source string, t int64, r *Report) *Lane {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &Lane{c: c, source: source, since: t, last: t, periodEnd: math.MaxInt64, gen: c.gen, sched: c.lsch}
	if c.b.Scored {
		l.sk = newLaneSketch()
	}
	// Staggered, not 0.5 for every lane: lanes of even traffic would
	// otherwise reach a whole credit (or a cold token) together, one pass
	// per lane at once, which overspends a budget smaller than the number
	// of lanes. The mean stays 0.5.
	u := stagger(c.name, source)
	l.credit = u
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
	if p := c.srcs[source].peer; p != nil {
		// the source's traffic, as the peers know it, moves with it
		l.view = p.smooth
		c.dropPeer(p)
	}
	c.srcs[source] = sourceRef{lane: l}
	c.laneList = append(c.laneList, l)
	// A lane opened changes the picture the working fraction was tuned
	// on: the next round visits (restUntil).
	c.rest.Store(0)
	if old := c.params.Load(); old.cold {
		prm := *old
		prm.coldRate, prm.coldBurst = c.coldRate()
		c.params.Store(&prm)
	}
	// The cold bucket starts full: events of a first batch may all carry
	// the same (or an earlier) instant than the opening. A bucket of less
	// than two tokens (a budget too small to pass an event per lane in two
	// tune intervals) starts at the lane's stagger instead, so that the
	// lanes' first passes spread out.
	rate, burst := c.coldRate()
	l.coldAt, l.coldTokens = t, burst
	if 2*rate*c.cfg.tune.Seconds() < 1 {
		l.coldTokens = u
	}
	return l
}

// close stops counting a lane; its last report stands for the source until
// a new owner publishes, or latest when set (see Tree.Lose). It reports
// whether no lane is left.
func (c *Controller) close(l *Lane, t int64, latest *Report) (Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := l.report(t)
	l.closed = true
	if c.srcs[l.source].lane == l {
		for i, x := range c.laneList {
			if x == l {
				c.laneList = slices.Delete(c.laneList, i, i+1) // clears the freed slot
				break
			}
		}
		if latest != nil {
			delete(c.srcs, l.source)
			c.take(nil, latest, t)
			p := c.srcs[l.source].peer
			p.smooth = l.view
			p.smooth.add(latest)
		} else {
			p := c.newPeer(l.source)
			p.rep, p.at, p.smooth = r, t, l.view
			// Its new owner carries on with its traffic: until that one's
			// reports come, the source passes as it did here.
			if s := r.Since.UnixNano(); t-s >= int64(c.cfg.tune) {
				c.rates(p, &r, Counters{}, s)
			}
			c.addPeer(p) // in the lane's place
		}
		if len(c.laneList) == 0 {
			c.emptySince = t
		}
	}
	return r, len(c.laneList) == 0
}

func (c *Controller) reports(t int64, dst []Report) []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.laneList {
		dst = append(dst, l.report(t))
	}
	return dst
}

// Snapshot returns the controller's quantities as of its last tune.
func (c *Controller) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// stagger returns a fraction in [0, 1) fixed by the budget and source
// names, the first credit of a lane: FNV-1a, then a 64-bit finalizer
// (MurmurHash3's fmix64), without which the high bits FNV leaves for names
// that differ in their last characters (p/1, p/2, …) are nearly the same,
// and so would be the lanes' first credits.
func stagger(budget, source string) float64 {
	h := uint64(14695981039346656037)
	for _, s := range [2]string{budget, source} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		h = (h ^ 0xff) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}
