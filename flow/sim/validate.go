package sim

import (
	"fmt"
	"math"
	"slices"
)

func bad(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks every field and returns the first problem, naming it.
func (s *Scenario) Validate() error {
	switch {
	case s.Duration <= 0:
		return bad("duration", "must be positive")
	case s.SyncInterval <= 0:
		return bad("sync_interval", "must be positive")
	case s.SyncDelay < 0:
		return bad("sync_delay", "must not be negative")
	case !(s.SyncLoss >= 0 && s.SyncLoss < 1):
		return bad("sync_loss", "must be a probability in [0, 1)")
	case s.TuneInterval <= 0:
		return bad("tune_interval", "must be positive")
	case len(s.Nodes) == 0:
		return bad("nodes", "at least one node is needed")
	case len(s.Budgets) == 0:
		return bad("budgets", "at least one budget is needed")
	}
	if err := s.validateNodes(); err != nil {
		return err
	}
	if err := s.validatePartitions(); err != nil {
		return err
	}
	if err := validateSpans("outages", s.Outages); err != nil {
		return err
	}
	if err := validateSpans("restarts", s.Restarts); err != nil {
		return err
	}
	if len(s.Restarts) > 0 && s.Partitions == nil {
		return bad("restarts", "broker restarts need partitions")
	}
	stalls := make([]Span, len(s.Stalls))
	for i, st := range s.Stalls {
		stalls[i] = st.Span
	}
	if err := validateSpans("stalls", stalls); err != nil {
		return err
	}
	if err := s.validateClockSteps(); err != nil {
		return err
	}
	if len(s.Stalls) > 0 && s.Partitions == nil {
		return bad("stalls", "stalls need partitions")
	}
	for i, st := range s.Stalls {
		for j, n := range st.Nodes {
			if !slices.ContainsFunc(s.Nodes, func(nd Node) bool { return nd.Name == n }) {
				return bad(fmt.Sprintf("stalls[%d].nodes[%d]", i, j), "no node named %q", n)
			}
		}
	}
	budgets := map[string]int{}
	for i := range s.Budgets {
		if err := s.validateBudget(i, budgets); err != nil {
			return err
		}
	}
	return s.validateParents(budgets)
}

func (s *Scenario) validateNodes() error {
	names := map[string]bool{}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			return bad(f+".name", "must not be empty")
		case names[n.Name]:
			return bad(f+".name", "%q is used twice", n.Name)
		case !(n.Rate >= 0) || !finite(n.Rate):
			return bad(f+".rate", "must be a finite number ≥ 0")
		case !(n.Jitter >= 0 && n.Jitter <= 1):
			return bad(f+".jitter", "must be in [0, 1]")
		case n.Start != nil && *n.Start < 0:
			return bad(f+".start", "must not be negative")
		case n.Stop != nil && n.Start != nil && *n.Stop <= *n.Start:
			return bad(f+".stop", "must be after start")
		case n.Stop != nil && *n.Stop <= 0:
			return bad(f+".stop", "must be positive")
		case n.Crash != nil && n.Stop != nil:
			return bad(f+".crash", "a node stops or crashes, not both")
		case n.Crash != nil && (*n.Crash <= 0 || n.Start != nil && *n.Crash <= *n.Start):
			return bad(f+".crash", "must be positive and after start")
		case s.Partitions != nil && (n.Rate != 0 || n.Jitter != 0 || len(n.Steps) > 0):
			return bad(f+".rate", "with partitions the traffic is the partitions'; a node has no rate, jitter or steps")
		}
		names[n.Name] = true
		if err := validateSteps(f+".steps", n.Steps); err != nil {
			return err
		}
	}
	return nil
}

func validateSteps(f string, steps []Step) error {
	for j, st := range steps {
		g := fmt.Sprintf("%s[%d]", f, j)
		switch {
		case st.At < 0:
			return bad(g+".at", "must not be negative")
		case j > 0 && st.At <= steps[j-1].At:
			return bad(g+".at", "steps must be in increasing time order")
		case !(st.Rate >= 0) || !finite(st.Rate):
			return bad(g+".rate", "must be a finite number ≥ 0")
		}
	}
	return nil
}

func (s *Scenario) validatePartitions() error {
	p := s.Partitions
	if p == nil {
		return nil
	}
	switch {
	case p.Count <= 0:
		return bad("partitions.count", "must be positive")
	case !(p.Rate >= 0) || !finite(p.Rate):
		return bad("partitions.rate", "must be a finite number ≥ 0")
	case !(p.Skew >= 0) || !finite(p.Skew):
		return bad("partitions.skew", "must be a finite number ≥ 0")
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return bad("partitions.jitter", "must be in [0, 1]")
	case p.CommitInterval <= 0 || s.SyncInterval%p.CommitInterval != 0:
		return bad("partitions.commit_interval", "must divide the sync interval")
	case p.SessionTimeout < 0:
		return bad("partitions.session_timeout", "must not be negative")
	case p.Rebalance < 0:
		return bad("partitions.rebalance", "must not be negative")
	case !(p.CatchUp >= 1) || !finite(p.CatchUp):
		return bad("partitions.catch_up", "must be at least 1")
	case p.LaneIdle < 0:
		return bad("partitions.lane_idle", "must not be negative")
	}
	return validateSteps("partitions.steps", p.Steps)
}

func validateSpans(f string, spans []Span) error {
	for i, sp := range spans {
		switch {
		case sp.From < 0:
			return bad(fmt.Sprintf("%s[%d].from", f, i), "must not be negative")
		case sp.To <= sp.From:
			return bad(fmt.Sprintf("%s[%d].to", f, i), "must be after from")
		}
	}
	return nil
}

func (s *Scenario) validateClockSteps() error {
	for i, st := range s.ClockSteps {
		f := fmt.Sprintf("clock_steps[%d]", i)
		switch {
		case st.At < 0:
			return bad(f+".at", "must not be negative")
		case i > 0 && st.At <= s.ClockSteps[i-1].At:
			return bad(f+".at", "steps must be in increasing time order")
		case st.At%s.TuneInterval != 0:
			return bad(f+".at", "must be a multiple of the tune interval (%v)", s.TuneInterval.D())
		case st.By == 0:
			return bad(f+".by", "must not be zero")
		}
	}
	return nil
}

// inSpans reports whether t falls in one of spans ([from, to) in Unix
// nanoseconds).
func inSpans(spans [][2]int64, t int64) bool {
	for _, sp := range spans {
		if t >= sp[0] && t < sp[1] {
			return true
		}
	}
	return false
}

// spans turns spans into Unix nanoseconds.
func spans(ss []Span) [][2]int64 {
	out := make([][2]int64, len(ss))
	for i, s := range ss {
		out[i] = [2]int64{epoch.UnixNano() + int64(s.From), epoch.UnixNano() + int64(s.To)}
	}
	return out
}

func (s *Scenario) validateBudget(i int, budgets map[string]int) error {
	b := s.Budgets[i]
	f := fmt.Sprintf("budgets[%d]", i)
	if b.Name == "" {
		return bad(f+".name", "must not be empty")
	}
	if _, dup := budgets[b.Name]; dup {
		return bad(f+".name", "%q is used twice", b.Name)
	}
	budgets[b.Name] = i
	switch {
	case !(b.Target > 0) || !finite(b.Target):
		return bad(f+".target", "must be a positive number")
	case b.Period < 0:
		return bad(f+".period", "must not be negative")
	case b.Period > 0 && b.End != nil:
		return bad(f+".period", "use either period or begin/end, not both")
	case b.Period == 0 && b.End == nil:
		return bad(f+".end", "a budget needs an end (with an optional begin) or a period")
	case b.Begin != nil && *b.Begin < 0:
		return bad(f+".begin", "must not be negative")
	case b.End != nil && *b.End <= b.begin():
		return bad(f+".end", "must be after begin")
	case b.Reserve < 0:
		return bad(f+".reserve", "must not be negative")
	case b.Period > 0 && b.Reserve >= b.Period:
		return bad(f+".reserve", "must be shorter than the period")
	case b.End != nil && b.Reserve.D() >= b.End.D()-b.begin().D():
		return bad(f+".reserve", "must be shorter than the window")
	case !(*b.Share >= 0 && *b.Share <= 1):
		return bad(f+".share", "must be in [0, 1]")
	}
	switch b.Score {
	case "", "uniform", "normal", "exponential":
	default:
		return bad(f+".score", "%q is not one of uniform, normal, exponential", b.Score)
	}
	for j, d := range b.Drift {
		if !finite(d.Shift) || !finite(d.Scale) || d.Scale < 0 || j > 0 && d.At <= b.Drift[j-1].At {
			return bad(fmt.Sprintf("%s.drift[%d]", f, j), "finite shift, scale ≥ 0, in increasing time order")
		}
	}
	return validateReward(f, b)
}

func validateReward(f string, b Budget) error {
	if p := b.Prior; p != nil {
		switch {
		case b.Reward == nil:
			return bad(f+".prior", "only a reward budget has a prior")
		case !(p.Conversion >= 0) || !finite(p.Conversion):
			return bad(f+".prior.conversion", "must be a finite number ≥ 0")
		case p.Delay < 0:
			return bad(f+".prior.delay", "must not be negative")
		}
	}
	r := b.Reward
	if r == nil {
		return nil
	}
	switch {
	case !(r.Probability > 0 && r.Probability <= 1):
		return bad(f+".reward.probability", "must be in (0, 1]")
	case r.Delay < 0:
		return bad(f+".reward.delay", "must not be negative")
	case !(r.Sigma >= 0) || !finite(r.Sigma):
		return bad(f+".reward.sigma", "must be a finite number ≥ 0")
	}
	switch r.Distribution {
	case "", delayFixed, delayExponential, delayLognormal:
	default:
		return bad(f+".reward.distribution", "%q is not one of fixed, exponential, lognormal", r.Distribution)
	}
	return nil
}

func (s *Scenario) validateParents(budgets map[string]int) error {
	for i, b := range s.Budgets {
		if b.Parent == "" {
			continue
		}
		f := fmt.Sprintf("budgets[%d].parent", i)
		if _, ok := budgets[b.Parent]; !ok {
			return bad(f, "no budget named %q", b.Parent)
		}
		seen := map[string]bool{b.Name: true}
		for p := b.Parent; p != ""; p = s.Budgets[budgets[p]].Parent {
			if seen[p] {
				return bad(f, "parents form a cycle through %q", p)
			}
			seen[p] = true
		}
	}
	return nil
}
