package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// bar is what a scenario must achieve, per budget (zero fields: unchecked).
type bar struct {
	finalErr  float64 // |final_error| ≤
	maxDev    float64 // max_deviation ≤
	precision float64 // score_precision ≥
	period    float64 // every complete period within this of its target
	under     bool    // achieved must not exceed target by more than finalErr (children of a binding parent)
}

// The bars of the flow issue, on the scenarios in testdata.
var bars = map[string]map[string]bar{
	"stable":     {"campaign": {finalErr: 0.005, maxDev: 0.02}},
	"skewed":     {"campaign": {finalErr: 0.005, maxDev: 0.02}},
	"node-loss":  {"campaign": {finalErr: 0.005, maxDev: 0.03}},
	"node-join":  {"campaign": {finalErr: 0.005, maxDev: 0.02}},
	"step":       {"campaign": {finalErr: 0.005, maxDev: 0.03}},
	"delay-loss": {"campaign": {finalErr: 0.005, maxDev: 0.02}},
	"reward":     {"clicks": {finalErr: 0.01}},
	"scored": {
		"uniform": {finalErr: 0.005, maxDev: 0.02, precision: 0.97},
		"normal":  {finalErr: 0.005, maxDev: 0.02, precision: 0.97},
		"expo":    {finalErr: 0.005, maxDev: 0.02, precision: 0.97},
	},
	"period": {"per-10s": {period: 0.01}},
	"nested": {
		"account": {finalErr: 0.005, maxDev: 0.02},
		"camp-a":  {under: true},
		"camp-b":  {under: true},
	},
}

func TestScenarioBars(t *testing.T) { checkBars(t, bars, 0) }

// floors are what every one of ten more seeds of each scenario must reach
// (different jitter draws, sync phases, scores, conversions and losses).
// Where they are looser than the bars, the bar is missed on some seeds:
// with 10% per-second jitter on every node, a period's end is off by up to
// 1.3%; with 1.6% of events passing, a scored cut estimated from a few
// thousand scores gives a precision down to 0.95.
var floors = map[string]map[string]bar{
	"stable":     bars["stable"],
	"skewed":     bars["skewed"],
	"node-loss":  bars["node-loss"],
	"node-join":  bars["node-join"],
	"step":       bars["step"],
	"delay-loss": bars["delay-loss"],
	"reward":     bars["reward"],
	"scored": {
		"uniform": {finalErr: 0.005, maxDev: 0.02, precision: 0.97},
		"normal":  {finalErr: 0.005, maxDev: 0.02, precision: 0.96},
		"expo":    {finalErr: 0.005, maxDev: 0.02, precision: 0.95},
	},
	"period": {"per-10s": {period: 0.015}},
	"nested": bars["nested"],
}

func TestScenarioSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("ten seeds of every scenario")
	}
	for seed := uint64(100); seed < 110; seed++ {
		checkBars(t, floors, seed)
	}
}

func checkBars(t *testing.T, bars map[string]map[string]bar, seed uint64) {
	for name, budgets := range bars {
		t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
			res := runFile(t, name+".yaml", seed)
			if len(res.Budgets) != len(budgets) {
				t.Fatalf("%d budgets in the result, want %d", len(res.Budgets), len(budgets))
			}
			for _, b := range res.Budgets {
				want := budgets[b.Name]
				t.Logf("%s: achieved %.0f of %.0f, final %+.3f%%, max dev %.3f%%, mean dev %.3f%%",
					b.Name, b.Achieved, b.Target, 100*b.FinalError, 100*b.MaxDeviation, 100*b.MeanAbsDeviation)
				if want.finalErr > 0 && !want.under && math.Abs(b.FinalError) > want.finalErr {
					t.Errorf("%s: final error %.4f, want within ±%.4f", b.Name, b.FinalError, want.finalErr)
				}
				if want.under && b.FinalError > 0.005 {
					t.Errorf("%s: final error %.4f, a child must stay within its target", b.Name, b.FinalError)
				}
				if want.maxDev > 0 && b.MaxDeviation > want.maxDev {
					t.Errorf("%s: max deviation %.4f, want ≤ %.4f", b.Name, b.MaxDeviation, want.maxDev)
				}
				if want.precision > 0 {
					if b.ScorePrecision == nil || *b.ScorePrecision < want.precision {
						t.Errorf("%s: score precision %.4f, want ≥ %.2f", b.Name, deref(b.ScorePrecision), want.precision)
					} else {
						t.Logf("%s: score precision %.4f", b.Name, *b.ScorePrecision)
					}
				}
				if want.period > 0 {
					if len(b.Periods) < 10 {
						t.Errorf("%s: %d complete periods", b.Name, len(b.Periods))
					}
					for _, p := range b.Periods {
						if math.Abs(p.Error) > want.period {
							t.Errorf("%s: period at %.0fs achieved %.0f (%+.2f%%)", b.Name, p.Start, p.Achieved, 100*p.Error)
						}
					}
				}
			}
		})
	}
}

// The same scenario and seed give the same report, byte for byte.
func TestDeterministic(t *testing.T) {
	sc, err := Load("testdata/delay-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out [2]bytes.Buffer
	for i := range out {
		res, err := Run(sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteJSON(&out[i]); err != nil {
			t.Fatal(err)
		}
		if err := res.WriteCSV(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if out[0].String() != out[1].String() {
		t.Fatal("two runs of one scenario differ")
	}
	sc.Seed++
	res, _ := Run(sc)
	var other bytes.Buffer
	_ = res.WriteJSON(&other)
	_ = res.WriteCSV(&other)
	if other.String() == out[0].String() {
		t.Fatal("another seed gave the very same run")
	}
}

// A report has the contract's fields, and the timeline one row per budget
// per sync interval.
func TestReportShape(t *testing.T) {
	sc, err := Load("testdata/nested.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"budgets"`, `"name"`, `"target"`, `"offered"`, `"passed"`, `"rewarded"`, `"achieved"`,
		`"final_error"`, `"max_deviation"`, `"mean_abs_deviation"`, `"exhausted_at"`, `"score_precision"`, `"sync_records"`} {
		if !strings.Contains(js.String(), f) {
			t.Errorf("report lacks %s", f)
		}
	}
	// 4 nodes × 3 budgets, once a second for 120 s
	if res.SyncRecords != 4*3*120 {
		t.Errorf("sync records %d, want %d", res.SyncRecords, 4*3*120)
	}
	var csv bytes.Buffer
	if err := res.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if lines[0] != "t_seconds,budget,offered,passed,rewarded,ideal" || len(lines) != 1+3*120 {
		t.Errorf("csv: header %q, %d lines", lines[0], len(lines))
	}
}

// A bad scenario names the field and the problem.
func TestBadScenario(t *testing.T) {
	good := "duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 10, end: 10s}]\n"
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("good scenario: %v", err)
	}
	cases := map[string]string{
		"duration: -1s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 10, end: 10s}]":                                                                    "duration",
		"duration: ten\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 10, end: 10s}]":                                                                    "not a duration",
		"duration: 10s\nnodes: [{name: a, rate: -10}]\nbudgets: [{name: b, target: 10, end: 10s}]":                                                                   "nodes[0].rate",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 0, end: 10s}]":                                                                     "budgets[0].target",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 10s, period: 1s}]":                                                         "budgets[0].period",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1}]":                                                                               "budgets[0].end",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s, score: zipf}]":                                                         "budgets[0].score",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s, parent: x}]":                                                           "budgets[0].parent",
		"duration: 10s\nsync_loss: 1\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                                        "sync_loss",
		"duration: 10s\nnodes: [{name: a, rate: 10, colour: red}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                                         "colour",
		"duration: 10s\nnodes: []\nbudgets: [{name: b, target: 1, end: 1s}]":                                                                                         "nodes",
		"duration: 10s\nnodes: [{name: a, rate: 10, steps: [{at: 5s, rate: 1}, {at: 2s, rate: 1}]}]\nbudgets: [{name: b, target: 1, end: 1s}]":                       "nodes[0].steps[1].at",
		"duration: 10s\npartitions: {count: 0, rate: 10}\nnodes: [{name: a}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                              "partitions.count",
		"duration: 10s\npartitions: {count: 2, rate: 10}\nnodes: [{name: a, rate: 5}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                     "nodes[0].rate",
		"duration: 10s\npartitions: {count: 2, rate: 10, commit_interval: 300ms}\nnodes: [{name: a}]\nbudgets: [{name: b, target: 1, end: 1s}]":                      "partitions.commit_interval",
		"duration: 10s\nrestarts: [{from: 1s, to: 2s}]\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                      "restarts",
		"duration: 10s\nstalls: [{from: 1s, to: 2s}]\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                        "stalls",
		"duration: 10s\npartitions: {count: 2, rate: 10}\nstalls: [{from: 3s, to: 3s}]\nnodes: [{name: a}]\nbudgets: [{name: b, target: 1, end: 1s}]":                "stalls[0].to",
		"duration: 10s\npartitions: {count: 2, rate: 10}\nstalls: [{from: 1s, to: 3s, nodes: [a, z]}]\nnodes: [{name: a}]\nbudgets: [{name: b, target: 1, end: 1s}]": "stalls[0].nodes[1]",
		"duration: 10s\noutages: [{from: 2s, to: 1s}]\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                       "outages[0].to",
		"duration: 10s\nnodes: [{name: a, rate: 10, stop: 2s, crash: 3s}]\nbudgets: [{name: b, target: 1, end: 1s}]":                                                 "nodes[0].crash",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s, reward: {probability: 0.1, distribution: zipf}}]":                      "budgets[0].reward.distribution",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s, score: normal, drift: [{at: 2s}, {at: 1s}]}]":                          "budgets[0].drift[1]",
		"duration: 10s\nnodes: [{name: a, rate: 10}]\nbudgets: [{name: b, target: 1, end: 1s, prior: {conversion: 0.1}}]":                                            "budgets[0].prior",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrScenario) {
			t.Errorf("%q: got %v, want an error naming %q", in, err, want)
		}
	}
}

// BenchmarkSimulateHour simulates 1 h of virtual time with 16 nodes at
// 1000 events/s each (57.6 M decisions).
func BenchmarkSimulateHour(b *testing.B) {
	sc, err := Load("testdata/hour-16x1000.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		res, err := Run(sc)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Budgets[0].Offered)/b.Elapsed().Seconds()*float64(i+1), "events/s")
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
