package clusterstatus

import (
	"math"
	"time"
)

// The status of a budget or an experiment is computed from what the stats
// topic holds, which readers check (finite, bounded counters, definitions
// that pass flow's rules); sums over many sources may still overflow, and
// a JSON document cannot hold an infinity or a year past 9999. So every
// figure leaves Build and EachBudget finite (NaN as 0, infinities as the
// largest float64) and every instant within the years 1 to 9999: the
// document always encodes.

// Finite returns f, NaN as 0 and ±Inf as ±math.MaxFloat64: a figure a
// JSON document can hold.
func Finite(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case math.IsInf(f, 1):
		return math.MaxFloat64
	case math.IsInf(f, -1):
		return -math.MaxFloat64
	}
	return f
}

func finitePtr(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := Finite(*f)
	return &v
}

var (
	firstPrintable = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	lastPrintable  = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// printable returns t within the years 1 to 9999.
func printable(t time.Time) time.Time {
	switch {
	case t.Before(firstPrintable):
		return firstPrintable
	case t.After(lastPrintable):
		return lastPrintable
	}
	return t
}

func printablePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := printable(*t)
	return &v
}

// finite makes b's figures finite and its instants printable.
func (b *Budget) finite() {
	for _, f := range []*float64{&b.Target, &b.ReserveSeconds, &b.PeriodSeconds, &b.Achieved, &b.Ideal, &b.Deviation,
		&b.TimeLeftSeconds, &b.OldestReportAge} {
		*f = Finite(*f)
	}
	b.PassRate = finitePtr(b.PassRate)
	b.Start, b.Finish = printable(b.Start), printable(b.Finish)
	b.Begin, b.End, b.CountsAt = printablePtr(b.Begin), printablePtr(b.End), printablePtr(b.CountsAt)
}

// finite makes x's figures finite.
func (x *Experiment) finite() {
	x.NewestCountsAge = finitePtr(x.NewestCountsAge)
	for i := range x.Variants {
		v := &x.Variants[i]
		v.Weight = Finite(v.Weight)
		v.Share, v.EventShare = finitePtr(v.Share), finitePtr(v.EventShare)
	}
	for _, s := range []*SRM{&x.SRM, &x.SRMEvents} {
		s.Chi2, s.P = Finite(s.Chi2), Finite(s.P)
	}
}
