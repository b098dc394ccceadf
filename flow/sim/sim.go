package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/throttler/throttler/flow"
)

// epoch is the virtual instant every scenario starts at.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Result is what a simulation measured; its JSON form is the report.
type Result struct {
	Budgets     []BudgetResult `json:"budgets"`
	SyncRecords int            `json:"sync_records"`
	// Timeline has one row per budget per sync interval.
	Timeline []Row `json:"-"`
}

// BudgetResult is one budget's outcome.
type BudgetResult struct {
	Name             string   `json:"name"`
	Kind             string   `json:"kind"` // passes or rewards: what achieved counts
	Target           float64  `json:"target"`
	Offered          uint64   `json:"offered"`
	Passed           uint64   `json:"passed"`
	Rewarded         uint64   `json:"rewarded"`
	Achieved         float64  `json:"achieved"`
	FinalError       float64  `json:"final_error"`
	MaxDeviation     float64  `json:"max_deviation"`
	MeanAbsDeviation float64  `json:"mean_abs_deviation"`
	ExhaustedAt      *float64 `json:"exhausted_at"`    // seconds from the start
	ScorePrecision   *float64 `json:"score_precision"` // null unless scored
	// Periods lists each complete period of a period budget; final_error
	// is then the error of the worst one.
	Periods []PeriodResult `json:"periods,omitempty"`
}

// PeriodResult is one complete period of a period budget.
type PeriodResult struct {
	Start    float64 `json:"start"` // seconds from the start
	Achieved float64 `json:"achieved"`
	Error    float64 `json:"error"`
}

// Row is one timeline sample: cluster-wide values, cumulative since the
// budget's start (for period budgets, since the current period's start).
type Row struct {
	T        float64
	Budget   string
	Offered  uint64
	Passed   uint64
	Rewarded uint64
	Ideal    float64
}

// budget is the simulator's ground truth about one budget.
type budget struct {
	spec   Budget
	idx    int
	chain  []int // this budget and its ancestors
	dist   string
	flow   flow.Budget
	begin  int64
	end    int64 // hard end of the window (MaxInt64 for period budgets)
	length int64 // window or period length
	// ideal-curve parameters of the current window/period
	pStart, pEnd int64
	period       int64

	offered, passed, rewarded    uint64 // all time (offered: inside the window)
	pOffered, pPassed, pRewarded uint64 // current period
	exhaustedAt                  int64

	maxDev, sumDev float64
	nDev           int

	scored            bool
	offScores         []float32
	passScores        []float32
	precGood, precAll uint64
	periods           []PeriodResult
}

func (b *budget) achieved() uint64 {
	if b.spec.Reward != nil {
		return b.pRewarded
	}
	return b.pPassed
}

func (b *budget) ideal(t int64) float64 {
	span := b.pEnd - int64(b.spec.Reserve) - b.pStart
	switch {
	case t <= b.pStart:
		return 0
	case t >= b.pStart+span:
		return b.spec.Target
	}
	return b.spec.Target * float64(t-b.pStart) / float64(span)
}

// closePeriod ends the current period (or the window): precision and, for
// period budgets, the period's result.
func (b *budget) closePeriod() {
	if b.scored {
		k := int(b.spec.Target)
		if b.spec.Reward != nil {
			k = len(b.passScores)
		}
		cut := float32(math.Inf(-1))
		if k > 0 && k <= len(b.offScores) {
			// the k-th largest offered score
			cut = kthLargest(b.offScores, k)
		}
		for _, s := range b.passScores {
			if s >= cut {
				b.precGood++
			}
		}
		b.precAll += uint64(len(b.passScores))
		b.offScores, b.passScores = b.offScores[:0], b.passScores[:0]
	}
	if b.spec.Period > 0 {
		a := float64(b.achieved())
		b.periods = append(b.periods, PeriodResult{
			Start:    float64(b.pStart-epoch.UnixNano()) / 1e9,
			Achieved: a,
			Error:    (a - b.spec.Target) / b.spec.Target,
		})
	}
}

// roll moves a period budget into the period holding t.
func (b *budget) roll(t int64) {
	for t >= b.pEnd {
		b.closePeriod()
		b.pStart, b.pEnd = b.pEnd, b.pEnd+b.length
		b.period++
		b.pOffered, b.pPassed, b.pRewarded = 0, 0, 0
	}
}

// stream is one node's traffic for one budget that receives events directly.
type stream struct {
	b     *budget
	share float64
	carry float64
}

type node struct {
	spec    Node
	idx     int
	start   int64
	stop    int64
	phase   int64
	alive   bool
	tree    *flow.Tree
	src     *flow.Source
	lanes   []*flow.Lane // by budget index
	streams []stream
	rewards []reward
	rng     *rand.Rand
	jitter  float64
	jitterS int64 // second the jitter factor was drawn for
	reports []flow.Report
}

type reward struct {
	at int64
	b  int
}

func (n *node) rate(t int64) float64 {
	r := n.spec.Rate
	off := time.Duration(t - epoch.UnixNano())
	for _, s := range n.spec.Steps {
		if off >= s.At.D() {
			r = s.Rate
		}
	}
	if n.spec.Jitter > 0 {
		if sec := int64(off / time.Second); sec != n.jitterS {
			n.jitterS = sec
			n.jitter = math.Max(0, 1+n.spec.Jitter*n.rng.NormFloat64())
		}
		r *= n.jitter
	}
	return r
}

// Run simulates a validated scenario.
func Run(sc *Scenario) (*Result, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	e0 := epoch.UnixNano()
	step := gcd(int64(sc.TuneInterval), int64(sc.SyncInterval))
	syncEvery := int64(sc.SyncInterval)
	duration := int64(sc.Duration)

	// budgets, ground truth
	byName := map[string]int{}
	bs := make([]*budget, len(sc.Budgets))
	fbs := make([]flow.Budget, len(sc.Budgets))
	for i, spec := range sc.Budgets {
		byName[spec.Name] = i
		b := &budget{spec: spec, idx: i, exhaustedAt: -1}
		b.begin = e0 + int64(spec.begin())
		fb := flow.Budget{Name: spec.Name, Target: spec.Target, Reserve: spec.Reserve.D(),
			Rewards: spec.Reward != nil, Scored: spec.Score != "", Parent: spec.Parent}
		if spec.Period > 0 {
			fb.Period = spec.Period.D()
			fb.Begin = time.Unix(0, b.begin)
			b.length = int64(spec.Period)
			b.end = math.MaxInt64
		} else {
			fb.Begin = time.Unix(0, b.begin)
			fb.End = epoch.Add(spec.End.D())
			b.end = fb.End.UnixNano()
			b.length = b.end - b.begin
		}
		b.pStart, b.pEnd = b.begin, b.begin+b.length
		b.flow = fb
		fbs[i] = fb
		bs[i] = b
	}
	for _, b := range bs {
		for j := b.idx; ; j = byName[sc.Budgets[j].Parent] {
			b.chain = append(b.chain, j)
			if b.dist == "" {
				b.dist = sc.Budgets[j].Score
			}
			if sc.Budgets[j].Parent == "" {
				break
			}
		}
		b.scored = b.spec.Score != ""
	}

	ex := newLossyExchange(int64(sc.SyncDelay), sc.SyncLoss, sc.Seed)
	nodes := make([]*node, len(sc.Nodes))
	for i, spec := range sc.Nodes {
		n := &node{spec: spec, idx: i, start: e0, stop: math.MaxInt64, jitterS: -1,
			rng: rand.New(rand.NewPCG(sc.Seed, uint64(i)+1))}
		if spec.Start != nil {
			n.start = e0 + int64(*spec.Start)
		}
		if spec.Stop != nil {
			n.stop = e0 + int64(*spec.Stop)
		}
		n.phase = (syncEvery * int64(i) / int64(len(sc.Nodes))) / step * step
		for _, b := range bs {
			if *b.spec.Share > 0 {
				n.streams = append(n.streams, stream{b: b, share: *b.spec.Share})
			}
		}
		nodes[i] = n
	}
	opts := []flow.Option{flow.SyncInterval(sc.SyncInterval.D()), flow.TuneInterval(sc.TuneInterval.D())}

	res := &Result{}
	alive := 0
	for t := e0; t < e0+duration; t += step {
		// membership: a node joins knowing the group's size, as a worker
		// knows its share of the partitions when they are assigned
		changed, members := false, 0
		for _, n := range nodes {
			if t >= n.start && t < n.stop {
				members++
			}
		}
		for _, n := range nodes {
			should := t >= n.start && t < n.stop
			if should != n.alive {
				changed = true
				n.alive = should
				if should {
					tree, err := flow.NewTree(fbs, append(opts, flow.PriorShare(1/float64(members)))...)
					if err != nil {
						return nil, fmt.Errorf("budgets: %w", err)
					}
					n.tree = tree
					n.src, err = tree.Open("node/"+n.spec.Name, time.Unix(0, t), nil)
					if err != nil {
						return nil, err
					}
					n.lanes = make([]*flow.Lane, len(bs))
					for i, b := range bs {
						n.lanes[i] = n.src.Lane(b.spec.Name)
					}
					n.phase = (n.phase + t - e0) % syncEvery
					ex.advance(t)
					n.tree.Sync(time.Unix(0, t), ex)
				}
			}
		}
		if changed {
			alive = 0
			for _, n := range nodes {
				if n.alive {
					alive++
				}
			}
			for _, n := range nodes {
				if n.alive {
					n.tree.SetShare(1 / float64(alive))
				}
			}
		}
		ex.advance(t)

		// sample the timeline
		if t > e0 && (t-e0)%syncEvery == 0 {
			sample(res, bs, t)
		}
		for _, b := range bs {
			if b.spec.Period > 0 && t >= b.pEnd {
				b.roll(t)
			}
		}

		for _, n := range nodes {
			deliverRewards(n, nodes, bs, t+step)
			if !n.alive {
				continue
			}
			now := time.Unix(0, t)
			if (t-e0-n.phase)%syncEvery == 0 {
				n.reports = n.tree.Reports(now, n.reports[:0])
				_ = ex.Publish(n.reports)
				n.tree.Sync(now, ex)
			} else {
				n.tree.Tune(now)
			}
			n.run(t, step, bs)
		}
	}
	end := e0 + duration
	sample(res, bs, end)
	for _, b := range bs {
		b.closePeriod()
	}
	res.SyncRecords = ex.records
	for _, b := range bs {
		res.Budgets = append(res.Budgets, b.result())
	}
	return res, nil
}

// run offers the node's events of one step.
func (n *node) run(t, step int64, bs []*budget) {
	rate := n.rate(t)
	dt := float64(step) / 1e9
	for i := range n.streams {
		s := &n.streams[i]
		x := s.carry + rate*s.share*dt
		k := int(x)
		s.carry = x - float64(k)
		if k == 0 {
			continue
		}
		lane := n.lanes[s.b.idx]
		gap := step / int64(k)
		for j := 0; j < k; j++ {
			te := t + gap*int64(j) + gap/2
			n.offer(te, s.b, lane, bs)
		}
	}
}

func (n *node) offer(te int64, b *budget, lane *flow.Lane, bs []*budget) {
	var score float64
	switch b.dist {
	case "uniform":
		score = n.rng.Float64()
	case "normal":
		score = n.rng.NormFloat64()
	case "exponential":
		score = n.rng.ExpFloat64()
	}
	for _, j := range b.chain {
		x := bs[j]
		if te >= x.begin && te < x.end {
			if x.spec.Period > 0 && te >= x.pEnd {
				x.roll(te)
			}
			x.offered++
			x.pOffered++
			if x.scored {
				x.offScores = append(x.offScores, float32(score))
			}
		}
	}
	v := lane.Decide(time.Unix(0, te), score)
	if !v.Pass {
		return
	}
	for _, j := range b.chain {
		x := bs[j]
		x.passed++
		x.pPassed++
		if x.scored {
			x.passScores = append(x.passScores, float32(score))
		}
		if x.spec.Reward == nil && x.exhaustedAt < 0 && float64(x.pPassed) >= x.spec.Target {
			x.exhaustedAt = te
		}
		if r := x.spec.Reward; r != nil && n.rng.Float64() < r.Probability {
			n.rewards = append(n.rewards, reward{at: te + int64(r.Delay), b: j})
		}
	}
}

// deliverRewards hands the rewards due before until to the node's lanes, or,
// when the node is gone, to the first live node (its reward partitions have
// moved there).
func deliverRewards(n *node, nodes []*node, bs []*budget, until int64) {
	i := 0
	for ; i < len(n.rewards) && n.rewards[i].at < until; i++ {
		r := n.rewards[i]
		b := bs[r.b]
		if b.spec.Period > 0 && r.at >= b.pEnd {
			b.roll(r.at)
		}
		b.rewarded++
		b.pRewarded++
		if b.exhaustedAt < 0 && float64(b.pRewarded) >= b.spec.Target {
			b.exhaustedAt = r.at
		}
		to := n
		if !n.alive {
			to = nil
			for _, m := range nodes {
				if m.alive {
					to = m
					break
				}
			}
		}
		if to != nil {
			to.lanes[r.b].Reward(time.Unix(0, r.at), 1)
		}
	}
	n.rewards = n.rewards[:copy(n.rewards, n.rewards[i:])]
}

func sample(res *Result, bs []*budget, t int64) {
	for _, b := range bs {
		ideal := b.ideal(t)
		res.Timeline = append(res.Timeline, Row{
			T:        float64(t-epoch.UnixNano()) / 1e9,
			Budget:   b.spec.Name,
			Offered:  b.pOffered,
			Passed:   b.pPassed,
			Rewarded: b.pRewarded,
			Ideal:    ideal,
		})
		if t <= b.begin {
			continue
		}
		d := math.Abs(float64(b.achieved())-ideal) / b.spec.Target
		b.maxDev = math.Max(b.maxDev, d)
		b.sumDev += d
		b.nDev++
	}
}

func (b *budget) result() BudgetResult {
	r := BudgetResult{
		Name:         b.spec.Name,
		Target:       b.spec.Target,
		Offered:      b.offered,
		Passed:       b.passed,
		Rewarded:     b.rewarded,
		MaxDeviation: b.maxDev,
		Periods:      b.periods,
	}
	if b.nDev > 0 {
		r.MeanAbsDeviation = b.sumDev / float64(b.nDev)
	}
	r.Kind = "passes"
	if b.spec.Reward != nil {
		r.Kind = "rewards"
		r.Achieved = float64(b.rewarded)
	} else {
		r.Achieved = float64(b.passed)
	}
	r.FinalError = (r.Achieved - b.spec.Target) / b.spec.Target
	if b.spec.Period > 0 {
		r.Achieved = float64(b.achieved())
		r.FinalError = 0
		for _, p := range b.periods {
			if math.Abs(p.Error) > math.Abs(r.FinalError) {
				r.FinalError = p.Error
			}
		}
	}
	if b.exhaustedAt >= 0 {
		s := float64(b.exhaustedAt-epoch.UnixNano()) / 1e9
		r.ExhaustedAt = &s
	}
	if b.scored {
		p := 1.0
		if b.precAll > 0 {
			p = float64(b.precGood) / float64(b.precAll)
		}
		r.ScorePrecision = &p
	}
	return r
}

// kthLargest returns the k-th largest value (1-based); it reorders xs.
func kthLargest(xs []float32, k int) float32 {
	lo, hi, want := 0, len(xs)-1, k-1
	rng := rand.New(rand.NewPCG(1, 2))
	for lo < hi {
		p := xs[lo+rng.IntN(hi-lo+1)]
		i, j := lo, hi
		for i <= j {
			for xs[i] > p {
				i++
			}
			for xs[j] < p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return xs[want]
		}
	}
	return xs[want]
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
