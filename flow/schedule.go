package flow

import (
	"fmt"
	"math"
)

// schedule turns a budget's window or period into instants (Unix
// nanoseconds) and its ideal curve.
type schedule struct {
	periodic bool
	anchor   int64 // start of period 0 (window: Begin)
	length   int64 // period length (window: End-Begin)
	reserve  int64
	hardEnd  int64 // window: End; periodic: never
	target   float64
}

func newSchedule(b Budget) schedule {
	s := schedule{target: b.Target, reserve: int64(b.Reserve)}
	if b.Period > 0 {
		s.periodic = true
		s.length = int64(b.Period)
		if !b.Begin.IsZero() {
			s.anchor = b.Begin.UnixNano()
		}
		s.hardEnd = math.MaxInt64
		return s
	}
	s.anchor = b.Begin.UnixNano()
	s.length = b.End.UnixNano() - s.anchor
	s.hardEnd = b.End.UnixNano()
	return s
}

// period returns the index and bounds of the period holding t. A window
// budget has one period, 0, which it also reports before it begins.
func (s *schedule) period(t int64) (idx, start, end int64) {
	if !s.periodic {
		return 0, s.anchor, s.hardEnd
	}
	d := t - s.anchor
	idx = d / s.length
	if d < 0 && d%s.length != 0 {
		idx--
	}
	start = s.anchor + idx*s.length
	return idx, start, start + s.length
}

// ideal is the ideal achieved amount at t in the period [start, end):
// target × clamp((t−start)/(end−reserve−start), 0, 1).
func (s *schedule) ideal(t, start, end int64) float64 {
	span := end - s.reserve - start
	if span <= 0 || t >= end-s.reserve {
		if t < start {
			return 0
		}
		return s.target
	}
	if t <= start {
		return 0
	}
	return s.target * float64(t-start) / float64(span)
}

// validateBudget checks one budget's own fields.
func validateBudget(b Budget) error {
	bad := func(field, reason string) error {
		return &BudgetError{Budget: b.Name, Field: field, Reason: reason}
	}
	switch {
	case b.Name == "":
		return bad("name", "must not be empty")
	case len(b.Name) > MaxNameBytes:
		return bad("name", fmt.Sprintf("is %d bytes long, more than %d", len(b.Name), MaxNameBytes))
	case CheckTarget(b.Target) != "":
		return bad("target", CheckTarget(b.Target))
	case !b.Begin.IsZero() && CheckTime(b.Begin) != "":
		return bad("begin", CheckTime(b.Begin))
	case !b.End.IsZero() && CheckTime(b.End) != "":
		return bad("end", CheckTime(b.End))
	case b.Reserve < 0:
		return bad("reserve", "must not be negative")
	case b.Period < 0:
		return bad("period", "must not be negative")
	case !(b.Conversion >= 0) || math.IsInf(b.Conversion, 0):
		return bad("conversion", "must be a finite number ≥ 0")
	case b.RewardDelay < 0:
		return bad("reward delay", "must not be negative")
	case !b.Rewards && (b.Conversion != 0 || b.RewardDelay != 0):
		return bad("conversion", "only a reward budget converts passes into rewards")
	}
	if b.Delay {
		switch {
		case b.Period == 0:
			return bad("period", "a delay budget needs a period: it holds events back until the next period refills it")
		case b.Scored:
			return bad("scored", "a delay budget passes every event in turn, so it cannot pick the highest scores")
		case b.Rewards:
			return bad("rewards", "a delay budget counts passes, not rewards")
		case b.Parent != "":
			return bad("parent", "a delay budget cannot be nested")
		}
	}
	if b.Period > 0 {
		if !b.End.IsZero() {
			return bad("end", "a period budget has no end; use begin/end or period, not both")
		}
		if b.Reserve >= b.Period {
			return bad("reserve", "must be shorter than the period")
		}
		return nil
	}
	switch {
	case b.Begin.IsZero() || b.End.IsZero():
		return bad("end", "a budget needs begin and end, or a period")
	case !b.End.After(b.Begin):
		return bad("end", "must be after begin")
	case b.Reserve >= b.End.Sub(b.Begin):
		return bad("reserve", "must be shorter than the window")
	}
	return nil
}
