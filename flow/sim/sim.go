package sim

import (
	"math"
	"slices"
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
	// OptimumPrecision is the paced offline optimum of a scored window
	// budget: the best precision of a selection made knowing the whole
	// window that stays within the run's maximum deviation of the ideal
	// course and ends on the target (see optimum.go); PrecisionRatio is
	// the run's precision over it. Both null otherwise.
	OptimumPrecision *float64 `json:"optimum_precision"`
	PrecisionRatio   *float64 `json:"precision_ratio"`
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

// world is one run's state.
type world struct {
	sc        *Scenario
	step      int64 // the simulation's time step: gcd of tune and sync
	syncEvery int64
	// commitEvery: partition mode's commit interval (node mode: step);
	// nodes publish at commits
	commitEvery int64
	duration    int64
	bs          []*budget
	fbs         []flow.Budget
	opts        []flow.Option
	ex          *lossyExchange
	nodes       []*node
	parts       []*partition  // partition mode
	stalls      []stall       // partition mode
	held        [][2]int64    // the stalls whose first batch after is held
	clockSteps  [][2]int64    // the nodes' clock steps: instant, size
	changed     []flow.Report // partition mode with LaneIdle: scratch of Source.Changed
}

// offset is how far the nodes' clock is from virtual time at t.
func (w *world) offset(t int64) int64 {
	var d int64
	for _, st := range w.clockSteps {
		if st[0] <= t {
			d += st[1]
		}
	}
	return d
}

// stall is a stall's span in Unix nanoseconds and the nodes it stops
// (all when none).
type stall struct {
	span  [2]int64
	nodes []string
}

// stalled reports whether the partitions of the node named n stand still
// at t.
func (w *world) stalled(n string, t int64) bool {
	for _, st := range w.stalls {
		if t >= st.span[0] && t < st.span[1] && (len(st.nodes) == 0 || slices.Contains(st.nodes, n)) {
			return true
		}
	}
	return false
}

// clock is the nodes' time at virtual time t.
func (w *world) clock(t int64) time.Time { return time.Unix(0, t+w.offset(t)) }

// stamp is the instant an event at te, read in the step at t, is decided
// with: the nodes' time when its batch was fetched, before a clock step at
// t, or when a held stall that ended in this step began.
func (w *world) stamp(t, te int64) time.Time {
	for _, h := range w.held {
		if t >= h[1] && t < h[1]+w.step {
			return w.clock(h[0])
		}
	}
	return time.Unix(0, te+w.offset(t-1))
}

// Run simulates a validated scenario.
func Run(sc *Scenario) (*Result, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	w := &world{
		sc:        sc,
		step:      gcd(int64(sc.TuneInterval), int64(sc.SyncInterval)),
		syncEvery: int64(sc.SyncInterval),
		duration:  int64(sc.Duration),
		opts:      []flow.Option{flow.SyncInterval(sc.SyncInterval.D()), flow.TuneInterval(sc.TuneInterval.D())},
	}
	w.budgets()
	w.ex = newLossyExchange(int64(sc.SyncDelay), sc.SyncLoss, sc.Seed, spans(append(sc.Outages, sc.Restarts...)))
	w.commitEvery = w.step
	for _, st := range sc.Stalls {
		sp := spans([]Span{st.Span})[0]
		w.stalls = append(w.stalls, stall{span: sp, nodes: st.Nodes})
		if st.Held {
			w.held = append(w.held, sp)
		}
	}
	for _, st := range sc.ClockSteps {
		w.clockSteps = append(w.clockSteps, [2]int64{epoch.UnixNano() + int64(st.At), int64(st.By)})
	}
	if sc.Partitions != nil {
		w.commitEvery = int64(sc.Partitions.CommitInterval)
		w.step = gcd(w.step, w.commitEvery)
	}
	for i, spec := range sc.Nodes {
		w.nodes = append(w.nodes, newNode(w, i, spec))
	}
	res := &Result{}
	var err error
	if sc.Partitions != nil {
		err = w.runPartitions(res)
	} else {
		for _, n := range w.nodes {
			n.streams = streamsOf(w.bs)
		}
		err = w.runNodes(res)
	}
	if err != nil {
		return nil, err
	}
	sample(res, w.bs, epoch.UnixNano()+w.duration)
	opt := make([]*float64, len(w.bs))
	for i, b := range w.bs {
		opt[i] = w.optimumOf(b)
		b.closePeriod()
	}
	res.SyncRecords = w.ex.records
	for i, b := range w.bs {
		r := b.result()
		if o := opt[i]; o != nil && r.ScorePrecision != nil {
			ratio := *r.ScorePrecision / *o
			r.OptimumPrecision, r.PrecisionRatio = o, &ratio
		}
		res.Budgets = append(res.Budgets, r)
	}
	return res, nil
}

// budgets sets up the ground truth of every budget and its flow budget.
func (w *world) budgets() {
	e0 := epoch.UnixNano()
	byName := map[string]int{}
	for i, spec := range w.sc.Budgets {
		byName[spec.Name] = i
		b := &budget{spec: spec, name: []byte(spec.Name), idx: i, exhaustedAt: -1, sync: w.syncEvery}
		b.begin = e0 + int64(spec.begin())
		fb := flow.Budget{Name: spec.Name, Target: spec.Target, Reserve: spec.Reserve.D(),
			Rewards: spec.Reward != nil, Scored: spec.Score != "", Parent: spec.Parent,
			Begin: time.Unix(0, b.begin)}
		if p := spec.Prior; p != nil {
			fb.Conversion, fb.RewardDelay = p.Conversion, p.Delay.D()
		}
		if spec.Period > 0 {
			fb.Period = spec.Period.D()
			b.length = int64(spec.Period)
			b.end = math.MaxInt64
		} else {
			fb.End = epoch.Add(spec.End.D())
			b.end = fb.End.UnixNano()
			b.length = b.end - b.begin
		}
		b.pStart, b.pEnd = b.begin, b.begin+b.length
		w.fbs = append(w.fbs, fb)
		w.bs = append(w.bs, b)
	}
	for _, b := range w.bs {
		for j := b.idx; ; j = byName[w.sc.Budgets[j].Parent] {
			b.chain = append(b.chain, j)
			if b.dist == "" {
				b.dist, b.drift = w.sc.Budgets[j].Score, w.sc.Budgets[j].Drift
			}
			if w.sc.Budgets[j].Parent == "" {
				break
			}
		}
		b.scored = b.spec.Score != ""
	}
}

// tick samples the timeline at sync instants and rolls period budgets.
func (w *world) tick(res *Result, t int64) {
	if e0 := epoch.UnixNano(); t > e0 && (t-e0)%w.syncEvery == 0 {
		sample(res, w.bs, t)
	}
	for _, b := range w.bs {
		if b.spec.Period > 0 && t >= b.pEnd {
			b.roll(t)
		}
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
