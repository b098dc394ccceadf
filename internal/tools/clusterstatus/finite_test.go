package clusterstatus

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
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

// withWorkers is a catalog with workers' status records.
type withWorkers struct {
	catalog
	ws []stats.WorkerStatus
}

func (w withWorkers) Workers() []stats.WorkerStatus { return w.ws }

// TestStreamParked: the partitions workers parked are listed, in the JSON
// document and the text, those of workers silent for ten minutes not.
func TestStreamParked(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	src := withWorkers{catalog: queryCatalog(at), ws: []stats.WorkerStatus{
		{Worker: "w1", At: at, Parked: []stats.ParkedSource{{Source: "events/3", Reason: "ledger: major version 2"}}},
		{Worker: "old", At: at.Add(-time.Hour), Parked: []stats.ParkedSource{{Source: "events/4", Reason: "gone"}}},
	}}
	var js, text bytes.Buffer
	if err := Stream(&js, src, "stats", at, Query{Top: 1}, true); err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := json.Unmarshal(js.Bytes(), &st); err != nil || len(st.Parked) != 1 || st.Parked[0] != (Parked{"events/3", "w1", "ledger: major version 2"}) {
		t.Fatalf("parked %+v (%v)", st.Parked, err)
	}
	if err := Stream(&text, src, "stats", at, Query{Top: 1}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "PARKED PARTITIONS (1)") || !strings.Contains(text.String(), "events/3 (worker w1)") {
		t.Fatalf("text:\n%s", text.String())
	}
}

// TestTextNamesPrintable: a name with control characters (a terminal
// escape) is printed quoted.
func TestTextNamesPrintable(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	src := catalog{fakeSource: fakeSource{reports: map[string][]flow.Report{}}, walks: new(int)}
	src.defs = []stats.BudgetDef{{Budget: flow.Budget{Name: "evil\x1b[2J", Target: 10, Period: time.Hour}}}
	var out bytes.Buffer
	if err := Stream(&out, src, "stats", at, Query{}, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), `"evil\x1b[2J"`) {
		t.Fatalf("text:\n%q", out.String())
	}
}
