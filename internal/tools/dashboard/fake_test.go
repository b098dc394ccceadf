package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// fakeSource is an in-memory Source: what a stats.View would hold.
type fakeSource struct {
	mu      sync.Mutex
	defs    []stats.BudgetDef
	reports map[string][]flow.Report
	exps    []stats.ExperimentDef
	counts  map[string][]stats.VariantCounts // by layer/experiment
	workers []stats.WorkerStatus
}

func newFake() *fakeSource {
	return &fakeSource{reports: map[string][]flow.Report{}, counts: map[string][]stats.VariantCounts{}}
}

func (f *fakeSource) BudgetDefs() []stats.BudgetDef {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stats.BudgetDef(nil), f.defs...)
}

func (f *fakeSource) View(budget string, dst []flow.Report) []flow.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(dst, f.reports[budget]...)
}

func (f *fakeSource) ExperimentDefs() []stats.ExperimentDef {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stats.ExperimentDef(nil), f.exps...)
}

func (f *fakeSource) VariantSources(layer, experiment string) []stats.VariantCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stats.VariantCounts(nil), f.counts[layer+"/"+experiment]...)
}

func (f *fakeSource) VariantTotals(layer, experiment string) (map[string]stats.VariantCount, int) {
	totals := map[string]stats.VariantCount{}
	vcs := f.VariantSources(layer, experiment)
	for _, vc := range vcs {
		for _, c := range vc.Counts {
			t := totals[c.Variant]
			t.Variant, t.Count, t.Keys = c.Variant, t.Count+c.Count, t.Keys+c.Keys
			totals[c.Variant] = t
		}
	}
	return totals, len(vcs)
}

func (f *fakeSource) Workers() []stats.WorkerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stats.WorkerStatus(nil), f.workers...)
}

// budget adds a budget definition.
func (f *fakeSource) budget(b flow.Budget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defs = append(f.defs, stats.BudgetDef{Budget: b})
}

// report sets a budget's counters on one source (passes, or rewards).
func (f *fakeSource) report(budget, source string, at time.Time, offered, passed uint64, rewards float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := flow.Report{Budget: budget, Source: source, At: at, InPeriod: flow.Counters{Offered: offered, Passed: passed, Rewards: rewards}}
	for i, old := range f.reports[budget] {
		if old.Source == source {
			r.Period = old.Period
			f.reports[budget][i] = r
			return
		}
	}
	f.reports[budget] = append(f.reports[budget], r)
}

// experiment adds an experiment with two variants of equal weight and one
// source's key counts.
func (f *fakeSource) experiment(layer, name string, at time.Time, a, b uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exps = append(f.exps, stats.ExperimentDef{Layer: layer, Experiment: name, Variants: []stats.VariantDef{
		{Name: "control", Weight: 1, Topic: name + ".control"}, {Name: "treatment", Weight: 1, Topic: name + ".treatment"}}})
	f.counts[layer+"/"+name] = []stats.VariantCounts{{Layer: layer, Experiment: name, Source: "events/0", At: at,
		Counts: []stats.VariantCount{{Variant: "control", Count: 3 * a, Keys: a}, {Variant: "treatment", Count: 3 * b, Keys: b}}}}
}

// synthetic fills f with n window budgets over [begin, begin+1h), with
// deviations spread over ±3%, one parent over every tenth budget's
// children, an experiment and two workers; progress sets their counters.
func (f *fakeSource) synthetic(n int, begin time.Time) {
	for i := range n {
		b := flow.Budget{Name: fmt.Sprintf("campaign-%06d", i), Target: 10000, Begin: begin, End: begin.Add(time.Hour)}
		if i%10 != 0 {
			b.Parent = fmt.Sprintf("campaign-%06d", i-i%10)
		}
		f.budget(b)
	}
	f.experiment("ui", "color", begin, 5000, 5100)
	f.workers = []stats.WorkerStatus{
		{Worker: "w-1", Started: begin, SyncInterval: time.Second, Commits: 900, Sources: []stats.SourceStatus{{Source: "events/0", Lag: 3, Offset: 100}}},
		{Worker: "w-2", Started: begin, SyncInterval: time.Second, Commits: 800, Sources: []stats.SourceStatus{{Source: "events/1", Lag: 0, Offset: 90}}},
	}
}

// progress sets the counters of synthetic's budgets at now: budget i is
// off its ideal course by 3% x (i%61-30)/30 of its target, reported by two
// sources, and the workers report at now.
func (f *fakeSource) progress(begin, now time.Time) {
	frac := min(1, float64(now.Sub(begin))/float64(time.Hour))
	for i, d := range f.BudgetDefs() {
		dev := 0.03 * float64(i%61-30) / 30 * frac
		passed := uint64(max(0, 10000*(frac+dev)))
		f.report(d.Budget.Name, "events/0", now, 2*passed, passed/2, 0)
		f.report(d.Budget.Name, "events/1", now, 2*passed, passed-passed/2, 0)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.workers {
		f.workers[i].At = now
		for j := range f.workers[i].Sources {
			f.workers[i].Sources[j].Committed = now
		}
	}
}

// serve starts the dashboard's handler on a loopback port.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts.URL
}

// getJSON GETs url and decodes its JSON answer, failing unless it is 200.
func getJSON[T any](t testing.TB, url string) T {
	t.Helper()
	var v T
	code := getInto(t, url, &v)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, code)
	}
	return v
}

// getInto GETs url, decodes its JSON answer into v and returns the
// status code.
func getInto(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %d, decoding: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode
}
