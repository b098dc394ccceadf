// Package clusterstatus builds the cluster status that `throttler status`
// prints, from what the stats topic holds: budget definitions and reports,
// and experiment definitions and variant counts (see package stats). It
// reads no clock and no Kafka: Build takes the instant and a source of
// records, so it is tested without a broker.
package clusterstatus

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

// Version is the version of the JSON document (Status). A field is only
// ever added within a version; a change of meaning or a removal bumps it.
const Version = 1

// Status is the document `throttler status --json` prints.
type Status struct {
	Version     int          `json:"version"`        // Version
	StatsTopic  string       `json:"stats_topic"`    // the topic read
	At          time.Time    `json:"at"`             // the instant the figures are computed for (RFC 3339)
	Budgets     []Budget     `json:"budgets"`        // by name
	Experiments []Experiment `json:"experiments"`    // by layer, then experiment
	Mismatches  int          `json:"srm_mismatches"` // experiments flagged by the SRM check
	// BudgetsMatched is the number of budgets the query matched, before
	// its Top: len(Budgets) without a query.
	BudgetsMatched int `json:"budgets_matched"`
	// Query is what selected the budgets; absent when every budget is
	// shown.
	Query *Query `json:"query,omitempty"`
	// Parked are the partitions workers parked (their ledger cannot be
	// restored whole: docs/operations.md, Parked partitions), as their
	// status records of the last ten minutes say; empty when none.
	Parked []Parked `json:"parked"`
}

// Parked is a partition a worker parked.
type Parked struct {
	Source string `json:"source"`
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// WorkerSource is a Source that also has the workers' status records (a
// stats.View): Build and Stream then list the parked partitions.
type WorkerSource interface {
	Workers() []stats.WorkerStatus
}

// parkedOf lists the partitions parked by the workers of src that
// published a status in the ten minutes before now, by source.
func parkedOf(src any, now time.Time) []Parked {
	out := []Parked{}
	ws, ok := src.(WorkerSource)
	if !ok {
		return out
	}
	for _, w := range ws.Workers() {
		if now.Sub(w.At) > 10*time.Minute {
			continue
		}
		for _, p := range w.Parked {
			out = append(out, Parked{Source: p.Source, Worker: w.Worker, Reason: p.Reason})
		}
	}
	slices.SortFunc(out, func(a, b Parked) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Worker, b.Worker))
	})
	return out
}

// Budget is one budget's progress in its current window or period.
type Budget struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"` // "passes" or "rewards": what Target counts
	Scored bool    `json:"scored"`
	Delay  bool    `json:"delay"` // holds events back instead of rejecting them
	Parent string  `json:"parent,omitempty"`
	Target float64 `json:"target"`
	// Window budgets: Begin, End, Reserve; period budgets: PeriodSeconds.
	Begin          *time.Time `json:"begin,omitempty"`
	End            *time.Time `json:"end,omitempty"`
	ReserveSeconds float64    `json:"reserve_seconds,omitempty"`
	PeriodSeconds  float64    `json:"period_seconds,omitempty"`
	// The current window or period: [Start, Finish).
	Start  time.Time `json:"start"`
	Finish time.Time `json:"finish"`
	// Achieved is what the budget counted in it (passes, or rewards),
	// summed over the sources; Ideal is where the ideal course is at At;
	// Deviation is (Achieved-Ideal)/Target.
	Achieved  float64 `json:"achieved"`
	Ideal     float64 `json:"ideal"`
	Deviation float64 `json:"deviation"`
	Offered   uint64  `json:"offered"`
	Passed    uint64  `json:"passed"`
	// PassRate is Passed/Offered in the current window or period; null
	// when nothing was offered.
	PassRate *float64 `json:"pass_rate"`
	// TimeLeftSeconds is the time until the budget must be spent (the end
	// minus the reserve, or the end of the period), 0 once past.
	TimeLeftSeconds float64 `json:"time_left_seconds"`
	// Sources is the number of sources that reported; OldestReport the
	// age in seconds of the oldest of their reports.
	Sources         int     `json:"sources"`
	OldestReportAge float64 `json:"oldest_report_age_seconds"`
	// CountsAt is the instant the counts stand for: the report instants
	// of the sources that counted, weighted by their traffic (offered
	// events and rewards, plus one). Reports are up to a sync interval
	// old, so in a short window the ideal course at CountsAt is the fair
	// comparison (the dashboard's). Null when no source counted.
	CountsAt *time.Time `json:"counts_at"`
	// Variant is "layer/experiment/variant" for the budget of a variant
	// limit, else empty.
	Variant string `json:"variant,omitempty"`
}

// Experiment is one experiment's cluster-wide variant counts and SRM test.
type Experiment struct {
	Layer      string `json:"layer"`
	Experiment string `json:"experiment"`
	Events     uint64 `json:"events"`
	Keys       uint64 `json:"keys"`
	Sources    int    `json:"sources"` // sources that reported counts
	// NewestCountsAge is the age in seconds of the newest counts a source
	// published (sources publish every sync interval while they route
	// events to the experiment); null when none did.
	NewestCountsAge *float64  `json:"newest_counts_age_seconds"`
	Variants        []Variant `json:"variants"`
	// SRM tests the key counts (what the workers' check tests); SRMEvents
	// the event counts, which heavy keys make vary more than the test
	// allows (shown for information).
	SRM       SRM `json:"srm"`
	SRMEvents SRM `json:"srm_events"`
}

// Variant is one variant's count against its weight.
type Variant struct {
	Name   string  `json:"name"`
	Topic  string  `json:"topic"`
	Weight float64 `json:"weight"` // its share of the split, 0..1
	Count  uint64  `json:"count"`  // events
	Keys   uint64  `json:"keys"`   // keys, each counted at its first event on its partition's owner
	// Share is Keys over the experiment's Keys; null with no keys.
	Share *float64 `json:"share"`
	// EventShare is Count over the experiment's Events; null with no
	// events.
	EventShare *float64 `json:"event_share"`
	Limit      string   `json:"limit,omitempty"`    // the budget of the variant's limit
	Fallback   string   `json:"fallback,omitempty"` // where events over the limit go
}

// SRM is the sample-ratio-mismatch test (splitter.CheckSRM).
type SRM struct {
	// Checked is false below splitter.SRMMinEvents events (P is 1 then).
	Checked  bool    `json:"checked"`
	Chi2     float64 `json:"chi2"`
	P        float64 `json:"p"`
	Mismatch bool    `json:"mismatch"` // Checked and P < splitter.SRMAlpha
}

// Source is what Build reads: a stats.View satisfies it.
type Source interface {
	BudgetDefs() []stats.BudgetDef
	View(budget string, dst []flow.Report) []flow.Report
	ExperimentDefs() []stats.ExperimentDef
	VariantTotals(layer, experiment string) (map[string]stats.VariantCount, int)
	VariantSources(layer, experiment string) []stats.VariantCounts
}

// Build computes the status at now from src, every budget included.
func Build(src Source, topic string, now time.Time) Status {
	st, limitOf := head(src, topic, now)
	var reps []flow.Report
	defs := src.BudgetDefs()
	st.Budgets = make([]Budget, 0, len(defs))
	for _, d := range defs {
		reps = src.View(d.Budget.Name, reps[:0])
		b := budget(d.Budget, reps, now)
		b.Variant = limitOf[b.Name]
		st.Budgets = append(st.Budgets, b)
	}
	st.BudgetsMatched = len(st.Budgets)
	return st
}

// head returns the status at now without its budgets: the experiments
// and their SRM tests; and the variant of each variant limit's budget.
func head(src Source, topic string, now time.Time) (Status, map[string]string) {
	st := Status{Version: Version, StatsTopic: topic, At: now.UTC(), Budgets: []Budget{}, Experiments: []Experiment{}, Parked: parkedOf(src, now)}
	limitOf := map[string]string{}
	for _, e := range src.ExperimentDefs() {
		x := experiment(src, e, now)
		if x.SRM.Mismatch {
			st.Mismatches++
		}
		for _, v := range e.Variants {
			if v.Limit != "" {
				limitOf[v.Limit] = e.Layer + "/" + e.Experiment + "/" + v.Name
			}
		}
		st.Experiments = append(st.Experiments, x)
	}
	return st, limitOf
}

func budget(d flow.Budget, reps []flow.Report, now time.Time) Budget {
	b := Budget{Name: d.Name, Kind: "passes", Scored: d.Scored, Delay: d.Delay, Parent: d.Parent, Target: d.Target}
	if d.Rewards {
		b.Kind = "rewards"
	}
	var start, end time.Time
	var idx int64
	if d.Period > 0 {
		b.PeriodSeconds = d.Period.Seconds()
		anchor := time.Unix(0, 0)
		if !d.Begin.IsZero() {
			anchor = d.Begin
		}
		n := now.Sub(anchor)
		idx = int64(n / d.Period)
		if n < 0 && n%d.Period != 0 {
			idx--
		}
		start = anchor.Add(time.Duration(idx) * d.Period)
		end = start.Add(d.Period)
	} else {
		start, end = d.Begin, d.End
		b.Begin, b.End = &start, &end
		b.ReserveSeconds = d.Reserve.Seconds()
	}
	b.Start, b.Finish = start.UTC(), end.UTC()
	due := end
	if d.Period == 0 {
		due = end.Add(-d.Reserve)
	}
	b.TimeLeftSeconds = max(due.Sub(now).Seconds(), 0)
	b.Ideal = idealAt(d.Target, start, due, now)
	var rewards, wsum, tsum float64
	for _, r := range reps {
		b.Sources++
		b.OldestReportAge = max(b.OldestReportAge, now.Sub(r.At).Seconds())
		if r.Period != idx {
			continue // counts of an earlier period
		}
		b.Offered += r.InPeriod.Offered
		b.Passed += r.InPeriod.Passed
		rewards += r.InPeriod.Rewards
		w := float64(r.InPeriod.Offered) + r.InPeriod.Rewards + 1
		wsum += w
		tsum += w * float64(r.At.Sub(start))
	}
	if wsum > 0 {
		at := start.Add(time.Duration(tsum / wsum)).UTC()
		b.CountsAt = &at
	}
	b.Achieved = float64(b.Passed)
	if d.Rewards {
		b.Achieved = rewards
	}
	if b.Offered > 0 {
		pr := float64(b.Passed) / float64(b.Offered)
		b.PassRate = &pr
	}
	if d.Target > 0 {
		b.Deviation = (b.Achieved - b.Ideal) / d.Target
	}
	b.finite()
	return b
}

// IdealAt is where the budget's ideal course stands at t in its current
// window or period: 0 until Start, Target from the instant it must be
// spent (Finish less the reserve) on, a straight line between.
func (b Budget) IdealAt(t time.Time) float64 {
	return idealAt(b.Target, b.Start, b.Due(), t)
}

// Due is the instant the budget must be spent by: Finish less the reserve.
func (b Budget) Due() time.Time {
	return b.Finish.Add(-time.Duration(math.Round(b.ReserveSeconds * float64(time.Second))))
}

func idealAt(target float64, start, due, t time.Time) float64 {
	switch span := due.Sub(start); {
	case !t.After(start):
		return 0
	case !t.Before(due) || span <= 0:
		return target
	default:
		return target * float64(t.Sub(start)) / float64(span)
	}
}

func experiment(src Source, e stats.ExperimentDef, now time.Time) Experiment {
	totals, sources := src.VariantTotals(e.Layer, e.Experiment)
	x := Experiment{Layer: e.Layer, Experiment: e.Experiment, Sources: sources}
	for _, vc := range src.VariantSources(e.Layer, e.Experiment) {
		if age := now.Sub(vc.At).Seconds(); x.NewestCountsAge == nil || age < *x.NewestCountsAge {
			x.NewestCountsAge = &age
		}
	}
	keys := make([]uint64, len(e.Variants))
	events := make([]uint64, len(e.Variants))
	weights := make([]float64, len(e.Variants))
	var wsum float64
	for i, v := range e.Variants {
		keys[i], events[i] = totals[v.Name].Keys, totals[v.Name].Count
		weights[i] = v.Weight
		wsum += v.Weight
		x.Events += events[i]
		x.Keys += keys[i]
	}
	for i, v := range e.Variants {
		xv := Variant{Name: v.Name, Topic: v.Topic, Weight: v.Weight / wsum, Count: events[i], Keys: keys[i], Limit: v.Limit, Fallback: v.Fallback}
		xv.Share = ratio(keys[i], x.Keys)
		xv.EventShare = ratio(events[i], x.Events)
		x.Variants = append(x.Variants, xv)
	}
	x.SRM = srm(keys, weights)
	x.SRMEvents = srm(events, weights)
	x.finite()
	return x
}

func ratio(a, b uint64) *float64 {
	if b == 0 {
		return nil
	}
	r := float64(a) / float64(b)
	return &r
}

func srm(obs []uint64, weights []float64) SRM {
	r := splitter.CheckSRM(obs, weights)
	s := SRM{Checked: r.Checked, Chi2: r.Chi2, P: r.P, Mismatch: r.Mismatch}
	if math.IsNaN(s.P) {
		s.P = 1
	}
	return s
}
