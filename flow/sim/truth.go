package sim

import (
	"math"
	"math/rand/v2"
)

// budget is the simulator's ground truth about one budget.
type budget struct {
	spec   Budget
	name   []byte // spec.Name, for Source.Get
	idx    int
	chain  []int // this budget and its ancestors
	dist   string
	drift  []Drift // of the budget whose scores the chain draws
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
	offRows           []int32 // the timeline row each offered score first counts in (window budgets)
	sync              int64
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

// offer counts an event of this budget's chain offered at te with score.
func (b *budget) offer(bs []*budget, te int64, score float64) {
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
				if x.spec.Period == 0 {
					x.offRows = append(x.offRows, int32((te-epoch.UnixNano())/x.sync+1))
				}
			}
		}
	}
}

// pass counts a pass at te; converts (a draw per level of a reward
// budget) says whether it will bring a reward, and then reward is called
// with the rewarded budget.
func (b *budget) pass(bs []*budget, te int64, score float64, rng *rand.Rand, reward func(j int)) {
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
		if r := x.spec.Reward; r != nil && rng.Float64() < r.Probability {
			reward(j)
		}
	}
}

// rewarded counts a reward that arrives at t.
func (b *budget) rewardAt(t int64) {
	if b.spec.Period > 0 && t >= b.pEnd {
		b.roll(t)
	}
	b.rewarded++
	b.pRewarded++
	if b.exhaustedAt < 0 && float64(b.pRewarded) >= b.spec.Target {
		b.exhaustedAt = t
	}
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
		b.offScores, b.passScores, b.offRows = b.offScores[:0], b.passScores[:0], b.offRows[:0]
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
