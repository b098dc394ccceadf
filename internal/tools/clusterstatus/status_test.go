package clusterstatus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

type fakeSource struct {
	defs     []stats.BudgetDef
	reports  map[string][]flow.Report
	exps     []stats.ExperimentDef
	totals   map[string]map[string]stats.VariantCount
	countsAt time.Time
}

func (f fakeSource) BudgetDefs() []stats.BudgetDef { return f.defs }
func (f fakeSource) View(b string, dst []flow.Report) []flow.Report {
	return append(dst, f.reports[b]...)
}
func (f fakeSource) ExperimentDefs() []stats.ExperimentDef { return f.exps }
func (f fakeSource) VariantSources(l, e string) []stats.VariantCounts {
	if f.totals[l+"/"+e] == nil {
		return nil
	}
	return []stats.VariantCounts{{Layer: l, Experiment: e, Source: "e/0", At: f.countsAt}, {Layer: l, Experiment: e, Source: "e/1", At: f.countsAt.Add(-time.Minute)}}
}
func (f fakeSource) VariantTotals(l, e string) (map[string]stats.VariantCount, int) {
	return f.totals[l+"/"+e], len(f.totals[l+"/"+e])
}

// TestBuild: step instants t0..t2 through a window with a reserve, a
// rewards period budget and an experiment below the SRM minimum.
func TestBuild(t *testing.T) {
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	src := fakeSource{
		defs: []stats.BudgetDef{
			{Budget: flow.Budget{Name: "w", Target: 1000, Begin: begin, End: begin.Add(100 * time.Second), Reserve: 20 * time.Second}},
			{Budget: flow.Budget{Name: "clicks", Target: 50, Period: time.Minute, Rewards: true}},
		},
		reports: map[string][]flow.Report{
			"w": {{Source: "e/0", At: begin.Add(40 * time.Second), InPeriod: flow.Counters{Offered: 1000, Passed: 500}}},
			"clicks": {
				{Source: "e/0", At: begin, Period: begin.Unix() / 60, InPeriod: flow.Counters{Offered: 10, Passed: 10, Rewards: 2.5}},
				{Source: "e/1", At: begin, Period: begin.Unix()/60 - 1, InPeriod: flow.Counters{Offered: 10, Passed: 10, Rewards: 40}},
			},
		},
		exps:     []stats.ExperimentDef{{Layer: "l", Experiment: "x", Variants: []stats.VariantDef{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}}},
		totals:   map[string]map[string]stats.VariantCount{"l/x": {"a": {Count: 100, Keys: 90}, "b": {Count: 500, Keys: 300}}},
		countsAt: begin,
	}
	for _, step := range []struct {
		at                   time.Duration
		ideal, left          float64
		clickIdeal, clickGot float64
	}{
		{-time.Second, 0, 81, 50.0 * 59 / 60, 40}, // before the window; the previous minute, e/1 counts
		{40 * time.Second, 500, 40, 50.0 * 40 / 60, 2.5},
		{90 * time.Second, 1000, 0, 50.0 * 30 / 60, 0}, // in the reserve; the next minute
	} {
		now := begin.Add(step.at)
		st := Build(src, "s", now)
		w, c := st.Budgets[0], st.Budgets[1]
		if w.Ideal != step.ideal || w.TimeLeftSeconds != step.left || w.Achieved != 500 || *w.PassRate != 0.5 {
			t.Errorf("at %v: window %+v", step.at, w)
		}
		if d := c.Ideal - step.clickIdeal; d > 1e-9 || d < -1e-9 || c.Achieved != step.clickGot || c.Kind != "rewards" {
			t.Errorf("at %v: clicks ideal %v achieved %v, want %v %v", step.at, c.Ideal, c.Achieved, step.clickIdeal, step.clickGot)
		}
		// The counts stand for their reports' instant: w's one report at
		// +40s; clicks' counting source at begin.
		if !w.CountsAt.Equal(begin.Add(40*time.Second)) || (step.at == 90*time.Second) != (c.CountsAt == nil) || (c.CountsAt != nil && !c.CountsAt.Equal(begin)) {
			t.Errorf("at %v: counts at %v, %v", step.at, w.CountsAt, c.CountsAt)
		}
		// IdealAt, from the document's fields alone, agrees with Build.
		if w.IdealAt(now) != w.Ideal || c.IdealAt(now) != c.Ideal || !w.Due().Equal(begin.Add(80*time.Second)) {
			t.Errorf("at %v: IdealAt %v %v, Build %v %v; due %v", step.at, w.IdealAt(now), c.IdealAt(now), w.Ideal, c.Ideal, w.Due())
		}
		x := st.Experiments[0]
		if x.SRM.Checked || x.SRM.P != 1 || x.Variants[1].Weight != 0.75 || x.Events != 600 || x.Keys != 390 || *x.Variants[0].Share != 90.0/390 ||
			*x.NewestCountsAge != step.at.Seconds() {
			t.Errorf("experiment %+v", x)
		}
	}
	// Two sources: their instants weighted by offered events plus one.
	two := Build(fakeSource{
		defs: []stats.BudgetDef{{Budget: flow.Budget{Name: "w", Target: 10, Begin: begin, End: begin.Add(time.Hour)}}},
		reports: map[string][]flow.Report{"w": {
			{Source: "e/0", At: begin.Add(10 * time.Second), InPeriod: flow.Counters{Offered: 9}},
			{Source: "e/1", At: begin.Add(20 * time.Second), InPeriod: flow.Counters{Offered: 29}},
		}},
	}, "s", begin.Add(time.Minute))
	if at := two.Budgets[0].CountsAt; at == nil || !at.Equal(begin.Add(17500*time.Millisecond)) { // (10×10 + 30×20) / 40
		t.Errorf("counts at %v", at)
	}
	// A delay budget says so.
	var dbuf bytes.Buffer
	dst := Build(fakeSource{defs: []stats.BudgetDef{{Budget: flow.Budget{Name: "d", Target: 10, Period: time.Second, Delay: true}}}}, "s", begin)
	if err := WriteText(&dbuf, dst); err != nil || !dst.Budgets[0].Delay || !strings.Contains(dbuf.String(), "passes (delay)") {
		t.Fatalf("delay budget: %+v, %v\n%s", dst.Budgets, err, dbuf.String())
	}

	// An empty topic prints, and its JSON has empty lists, not nulls.
	var buf bytes.Buffer
	st := Build(fakeSource{}, "s", begin)
	if err := WriteText(&buf, st); err != nil || !strings.Contains(buf.String(), "no budget definitions") {
		t.Fatalf("%v: %s", err, buf.String())
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"budgets":[]`) || !strings.Contains(string(b), `"experiments":[]`) {
		t.Fatalf("%s", b)
	}
}
