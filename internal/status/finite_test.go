package status

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// TestStreamAlwaysJSON builds the status of definitions and reports no
// reader lets through (a target of 1.7e308 and of 5e-324, rewards summing
// to +Inf, reports from the year 200000, weights that sum to +Inf), as a
// source other than a stats.View could hand them: the JSON document is
// valid, every figure finite.
func TestStreamAlwaysJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	far := time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)
	src := catalog{fakeSource: fakeSource{reports: map[string][]flow.Report{}, totals: map[string]map[string]stats.VariantCount{},
		countsAt: far}, walks: new(int)}
	for _, b := range []flow.Budget{
		{Name: "huge", Target: 1.7e308, Begin: at.Add(-time.Hour), End: at.Add(time.Hour)},
		{Name: "tiny", Target: 5e-324, Begin: at.Add(-time.Hour), End: far},
		{Name: "clicks", Target: 10, Period: time.Hour, Rewards: true},
	} {
		src.defs = append(src.defs, stats.BudgetDef{Budget: b})
		src.reports[b.Name] = []flow.Report{
			{Source: "e/0", At: far, Period: at.UnixNano() / int64(time.Hour), InPeriod: flow.Counters{Offered: 10, Passed: 5, Rewards: math.MaxFloat64}},
			{Source: "e/1", At: at, Period: at.UnixNano() / int64(time.Hour), InPeriod: flow.Counters{Offered: 10, Passed: 5, Rewards: math.MaxFloat64}},
		}
	}
	src.exps = []stats.ExperimentDef{{Layer: "l", Experiment: "e", Variants: []stats.VariantDef{{Name: "a", Weight: math.MaxFloat64}, {Name: "b", Weight: math.MaxFloat64}}}}
	src.totals["l/e"] = map[string]stats.VariantCount{"a": {Count: 5, Keys: 5}}
	for _, asJSON := range []bool{true, false} {
		var out bytes.Buffer
		if err := Stream(&out, src, "stats", at, Query{}, asJSON); err != nil {
			t.Fatalf("json %v: %v", asJSON, err)
		}
		if !asJSON {
			continue
		}
		var st Status
		if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st.Budgets) != 3 {
			t.Fatalf("not a status document (%v):\n%s", err, out.String())
		}
	}
	if _, err := json.Marshal(Build(src, "stats", at)); err != nil {
		t.Fatalf("Build: %v", err)
	}
}
