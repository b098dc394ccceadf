package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow/sim"
)

// Bar is the largest final error, in parts of the target, the demo
// accepts for a budget.
const Bar = 0.01

// Result is what a demo run did.
type Result struct {
	Begin      time.Time     `json:"begin"`
	End        time.Time     `json:"end"`
	Rate       float64       `json:"rate"`
	Workers    int           `json:"workers"`
	ReadyAfter time.Duration `json:"-"`
	// Produced counts the events the load generator had acknowledged;
	// Events counts what the input topic holds.
	Produced   uint64           `json:"produced"`
	Events     uint64           `json:"events"`
	Budgets    []BudgetResult   `json:"budgets"`
	Experiment ExperimentResult `json:"experiment"`
	Warnings   []string         `json:"warnings,omitempty"`
	// Dashboard is the URL the web dashboard was served on, if any.
	Dashboard string `json:"dashboard,omitempty"`

	samples     map[string][]Sample
	viewFinal   map[string]float64
	viewOffered []float64
}

// BudgetResult is one budget's outcome.
type BudgetResult struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`
	Parent string  `json:"parent,omitempty"`
	Scored bool    `json:"scored,omitempty"`
	Target float64 `json:"target"`
	// Achieved is what the topics hold: passes in the output and variant
	// topics (a parent: its children's), or for a reward budget the clicks
	// in the reward topic.
	Achieved float64 `json:"achieved"`
	// Passes counts the budget's events in the output and variant topics
	// (a parent: its children's).
	Passes uint64 `json:"passes"`
	// Counted is the cluster's own count, from the stats topic at the end.
	Counted float64 `json:"counted"`
	Offered float64 `json:"offered"`
	// FinalError is (Achieved − Target) / Target.
	FinalError float64 `json:"final_error"`
	// MaxDeviation is the largest |achieved − ideal| / target of the
	// samples taken every second in the window.
	MaxDeviation float64 `json:"max_deviation"`
}

// Within reports whether the budget ended within Bar of its target.
func (b BudgetResult) Within() bool { return math.Abs(b.FinalError) <= Bar }

// ExperimentResult is the experiment's split of the passed events.
type ExperimentResult struct {
	Layer      string          `json:"layer"`
	Name       string          `json:"name"`
	Allocation float64         `json:"allocation"`
	Variants   []VariantResult `json:"variants"`
	// Outside counts the passed events of users not in the experiment
	// (in the output topic).
	Outside uint64 `json:"outside"`
}

// VariantResult is one variant's share.
type VariantResult struct {
	Name   string `json:"name"`
	Topic  string `json:"topic"`
	Events uint64 `json:"events"`
	Users  int    `json:"users"`
}

// fill sets the budgets and the experiment from the counts.
func (r *Result) fill(cfg *config.Config, cnt *counted, samples map[string][]Sample) {
	r.samples = samples
	r.Events = cnt.events
	achieved := map[string]float64{}
	passes := map[string]uint64{}
	for _, b := range cfg.Budgets {
		passes[b.Name] += cnt.passes[b.Name]
		if b.Kind == config.KindRewards {
			achieved[b.Name] += float64(cnt.clicks[b.Name])
		} else {
			achieved[b.Name] += float64(cnt.passes[b.Name])
		}
	}
	for _, b := range cfg.Budgets { // children come after their parent
		if b.Parent != "" {
			achieved[b.Parent] += achieved[b.Name]
			passes[b.Parent] += passes[b.Name]
		}
	}
	for i, b := range cfg.Budgets {
		br := BudgetResult{
			Name: b.Name, Kind: string(b.Kind), Parent: b.Parent, Scored: b.Scored, Target: b.Target,
			Achieved: achieved[b.Name], Passes: passes[b.Name], Counted: r.viewFinal[b.Name], Offered: r.viewOffered[i],
		}
		br.FinalError = (br.Achieved - br.Target) / br.Target
		for _, s := range samples[b.Name] {
			br.MaxDeviation = math.Max(br.MaxDeviation, math.Abs(s.Achieved-s.Ideal)/b.Target)
		}
		r.Budgets = append(r.Budgets, br)
	}
	l := cfg.Layers[0]
	x := l.Experiments[0]
	r.Experiment = ExperimentResult{Layer: l.Name, Name: x.Name, Allocation: x.Allocation, Outside: cnt.variants[cfg.Topics.Output]}
	for _, v := range x.Variants {
		r.Experiment.Variants = append(r.Experiment.Variants, VariantResult{
			Name: v.Name, Topic: v.Topic, Events: cnt.variants[v.Topic], Users: len(cnt.users[v.Topic]),
		})
	}
}

// Missed returns the budgets that ended more than Bar away from their
// target.
func (r *Result) Missed() []string {
	var out []string
	for _, b := range r.Budgets {
		if !b.Within() {
			out = append(out, b.Name)
		}
	}
	return out
}

// WriteSummary prints the final tables.
func (r *Result) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Summary: %d events produced at %.0f/s over a %.0fs window, %d workers, exactly-once.\n",
		r.Produced, r.Rate, r.End.Sub(r.Begin).Seconds(), r.Workers)
	b.WriteString("Achieved is what the output and variant topics hold (read_committed); for clicks-goal, the clicks in the reward topic.\n\n")
	var t table
	t.add("budget", "kind", "target", "achieved", "error", "max deviation", "stats topic", "within 1%")
	for _, x := range r.Budgets {
		name := x.Name
		if x.Parent != "" {
			name = "  " + name
		}
		kind := x.Kind
		if x.Scored {
			kind += ", scored"
		}
		ok := "yes"
		if !x.Within() {
			ok = "NO"
		}
		t.add(name, kind, f0(x.Target), f0(x.Achieved), fmt.Sprintf("%+.2f%%", 100*x.FinalError),
			fmt.Sprintf("%.2f%%", 100*x.MaxDeviation), f0(x.Counted), ok)
	}
	t.write(&b)
	e := r.Experiment
	fmt.Fprintf(&b, "\nExperiment %s/%s (%.0f%% of users):\n", e.Layer, e.Name, e.Allocation)
	var total uint64 = e.Outside
	for _, v := range e.Variants {
		total += v.Events
	}
	var et table
	et.add("variant", "topic", "passed events", "share", "users")
	for _, v := range e.Variants {
		et.add(v.Name, v.Topic, fmt.Sprint(v.Events), pct(v.Events, total), fmt.Sprint(v.Users))
	}
	et.add("(not in it)", topicPassed, fmt.Sprint(e.Outside), pct(e.Outside, total), "")
	et.write(&b)
	for _, s := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	if m := r.Missed(); len(m) > 0 {
		fmt.Fprintf(&b, "\n%d budget(s) ended more than 1%% from their target: %s\n", len(m), strings.Join(m, ", "))
	} else {
		b.WriteString("\nEvery budget ended within 1% of its target.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(n, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

// WriteJSON writes the report as one JSON document.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws each budget's achieved amount against its ideal curve
// over the window (the simulator's chart, fed with the samples).
func (r *Result) WriteSVG(w io.Writer) error {
	var sr sim.Result
	for _, b := range r.Budgets {
		sr.Budgets = append(sr.Budgets, sim.BudgetResult{
			Name: b.Name, Kind: b.Kind, Target: b.Target, Achieved: b.Achieved,
			FinalError: b.FinalError, MaxDeviation: b.MaxDeviation,
		})
		row := sim.Row{Budget: b.Name}
		sr.Timeline = append(sr.Timeline, row) // the origin
		for _, s := range r.samples[b.Name] {
			row.T = s.At.Sub(r.Begin).Seconds()
			row.Ideal = s.Ideal
			if b.Kind == string(config.KindRewards) {
				row.Rewarded = uint64(math.Round(s.Achieved))
			} else {
				row.Passed = uint64(math.Round(s.Achieved))
			}
			sr.Timeline = append(sr.Timeline, row)
		}
	}
	return sr.WriteSVG(w)
}
