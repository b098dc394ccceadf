package consumer

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttler/throttler/flow"
)

// TestCountsFlush checks a partition's counts against the metrics they
// flush to: the counters a budget keeps between flushes add up, a budget
// that only refuses gets no offered series, a sweep that deletes a
// budget's series makes the next flush start new ones (and not add to the
// deleted ones), and budgets idle for keepIdleFlushes are forgotten.
func TestCountsFlush(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg, DefaultBudgetSeries)
	c := newCounts()
	pass := func(budget string, n int) { c.pass(budget, n) }
	want := func(name string, labels map[string]string, v float64) {
		t.Helper()
		got, ok := gauge(t, reg, name, labels)
		if !ok || got != v {
			t.Fatalf("%s%v = %v (present %v), want %v", name, labels, got, ok, v)
		}
	}
	absent := func(name string, labels map[string]string) {
		t.Helper()
		if got, ok := gauge(t, reg, name, labels); ok {
			t.Fatalf("%s%v = %v, want no series", name, labels, got)
		}
	}
	a := map[string]string{"budget": "a"}

	pass("a", 3)
	c.reject(rejectKey{"a", "paced"})
	c.reject(rejectKey{"a", "paced"})
	c.reject(rejectKey{"parent", "over"})
	pass("a", 1) // after a run of rejects
	c.flush(m)
	want("throttler_offered_total", a, 4)
	want("throttler_passed_total", a, 4)
	want("throttler_rejected_total", map[string]string{"budget": "a", "reason": "paced"}, 2)
	want("throttler_rejected_total", map[string]string{"budget": "parent", "reason": "over"}, 1)
	absent("throttler_offered_total", map[string]string{"budget": "parent"})

	pass("a", 2)
	c.reject(rejectKey{"a", "paced"})
	c.flush(m)
	want("throttler_passed_total", a, 6)
	want("throttler_rejected_total", map[string]string{"budget": "a", "reason": "paced"}, 3)

	// Events refused by their own budget, counted on the counters found
	// for the event, add to the runs of rejects of the same key.
	b := c.budget("a")
	b.offered++
	b.refused("paced")
	c.reject(rejectKey{"a", "paced"})
	c.budget("a").refused("score")
	c.flush(m)
	want("throttler_offered_total", a, 7)
	want("throttler_rejected_total", map[string]string{"budget": "a", "reason": "paced"}, 5)
	want("throttler_rejected_total", map[string]string{"budget": "a", "reason": "score"}, 1)

	if n := m.sweep(time.Unix(1e9, 0), time.Minute); n != 2 {
		t.Fatalf("sweep deleted %d budgets' series, want 2", n)
	}
	absent("throttler_passed_total", a)
	pass("a", 5)
	c.flush(m)
	want("throttler_passed_total", a, 5)
	absent("throttler_rejected_total", map[string]string{"budget": "a", "reason": "paced"})
	c.reject(rejectKey{"a", "paced"})
	c.flush(m)
	want("throttler_rejected_total", map[string]string{"budget": "a", "reason": "paced"}, 1)

	for range 2*keepIdleFlushes + 1 {
		c.flush(m)
	}
	if len(c.budgets) != 0 || len(c.dirty) != 0 || c.last != nil {
		t.Fatalf("after %d idle flushes the counts keep %d budgets, %d dirty, last %v; want none", 2*keepIdleFlushes+1, len(c.budgets), len(c.dirty), c.last)
	}
	want("throttler_passed_total", a, 5)
}

// TestBudgetGauges checks the per-budget gauges the tuner sets from the
// controllers' snapshots: set after a tune, unchanged (and not looked up
// again) while the controller is not tuned, set anew after a sweep deleted
// them, and forgotten with their controller.
func TestBudgetGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg, DefaultBudgetSeries)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, err := flow.NewTree([]flow.Budget{{Name: "a", Target: 1000, Begin: t0, End: t0.Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := tree.Open("events/0", t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := src.Lane("a")
	pass := func() {
		m.beginGauges()
		for _, c := range tree.Controllers() {
			m.snapshot(c)
		}
		m.endGauges()
	}
	a := map[string]string{"budget": "a"}
	gaugeOf := func(name string) float64 {
		t.Helper()
		v, ok := gauge(t, reg, name, a)
		if !ok {
			t.Fatalf("%s{budget=a}: no series", name)
		}
		return v
	}
	now := t0
	for range 20 {
		l.Decide(now, 0)
		now = now.Add(100 * time.Millisecond)
		tree.Tune(now)
	}
	pass()
	snap := tree.Controller("a").Snapshot()
	if got := gaugeOf("throttler_working_pass_rate"); got != snap.WorkingPassRate {
		t.Fatalf("working pass rate gauge %v, snapshot %v", got, snap.WorkingPassRate)
	}
	if got := gaugeOf("throttler_lag_behind_ideal"); got != snap.Lag {
		t.Fatalf("lag gauge %v, snapshot %v", got, snap.Lag)
	}
	// A sweep deletes the series; the next pass sets them again.
	if n := m.sweep(now.Add(time.Hour), time.Minute); n != 1 {
		t.Fatalf("sweep deleted %d budgets' series, want 1", n)
	}
	if _, ok := gauge(t, reg, "throttler_working_pass_rate", a); ok {
		t.Fatal("series left after the sweep")
	}
	pass()
	if got := gaugeOf("throttler_working_pass_rate"); got != snap.WorkingPassRate {
		t.Fatalf("after the sweep: working pass rate gauge %v, snapshot %v", got, snap.WorkingPassRate)
	}
	// A new tune moves the gauges.
	for range 50 {
		l.Decide(now, 0)
		l.Decide(now, 0)
		now = now.Add(100 * time.Millisecond)
		tree.Tune(now)
	}
	pass()
	snap = tree.Controller("a").Snapshot()
	if got := gaugeOf("throttler_lag_behind_ideal"); got != snap.Lag {
		t.Fatalf("after tunes: lag gauge %v, snapshot %v", got, snap.Lag)
	}
	// The controller gone, its gauges are forgotten.
	tree.Close(src, now)
	tree.Tune(now.Add(time.Hour))
	pass()
	if len(m.gauges) != 0 {
		t.Fatalf("%d controllers' gauges kept after their controllers were dropped", len(m.gauges))
	}
}

// TestBudgetSeriesCap checks the bound on the budgets with series of
// their own: beyond it, budgets count in the series of OverflowBudget,
// whose sum with the others is every count, and have no gauges; a sweep
// deletes idle budgets' series (their rejected series by their reasons)
// and makes room for the next active budget.
func TestBudgetSeriesCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg, 2)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.series.now = t0
	c := newCounts()
	pass := func(budget string, n int) { c.pass(budget, n) }
	// series returns the family's series by budget label ("" when absent).
	series := func(name string) map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, s := range mf.GetMetric() {
				budget := ""
				for _, lp := range s.GetLabel() {
					if lp.GetName() == "budget" {
						budget = lp.GetValue()
					}
				}
				out[budget] += metricValue(s)
			}
		}
		return out
	}
	want := func(name string, w map[string]float64) {
		t.Helper()
		if got := series(name); !maps.Equal(got, w) {
			t.Fatalf("%s by budget: %v, want %v", name, got, w)
		}
	}

	pass("a", 1)
	pass("b", 2)
	pass("c", 3)
	c.reject(rejectKey{"c", "paced"})
	c.reject(rejectKey{"b", "paced"})
	c.flush(m)
	want("throttler_passed_total", map[string]float64{"a": 1, "b": 2, OverflowBudget: 3})
	want("throttler_rejected_total", map[string]float64{"b": 1, OverflowBudget: 1})
	pass("d", 4)
	c.flush(m)
	want("throttler_passed_total", map[string]float64{"a": 1, "b": 2, OverflowBudget: 7})

	// Gauges: of the budgets with series only.
	tree, err := flow.NewTree([]flow.Budget{
		{Name: "a", Target: 1000, Begin: t0, End: t0.Add(time.Hour)},
		{Name: "c", Target: 1000, Begin: t0, End: t0.Add(time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := tree.Open("events/0", t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	la, lc := src.Lane("a"), src.Lane("c")
	now := t0
	for range 10 {
		la.Decide(now, 0)
		lc.Decide(now, 0)
		now = now.Add(100 * time.Millisecond)
		tree.Tune(now)
	}
	m.beginGauges()
	for _, ctl := range tree.Controllers() {
		m.snapshot(ctl)
	}
	m.endGauges()
	if got := series("throttler_working_pass_rate"); len(got) != 1 || !hasKey(got, "a") {
		t.Fatalf("working pass rate gauges by budget: %v, want budget a's alone", got)
	}

	// a and b idle past SeriesIdle, c and d active: the sweep deletes a's
	// and b's series, every one of them, and c then gets its own.
	m.sweep(now, time.Minute)
	pass("c", 5)
	pass("d", 1)
	c.flush(m)
	if n := m.sweep(now.Add(2*time.Minute), time.Minute); n != 2 {
		t.Fatalf("sweep deleted %d budgets' series, want 2 (a, b)", n)
	}
	want("throttler_rejected_total", map[string]float64{OverflowBudget: 1})
	want("throttler_working_pass_rate", map[string]float64{})
	pass("c", 6)
	pass("d", 1)
	pass("e", 1)
	c.flush(m)
	want("throttler_passed_total", map[string]float64{"c": 6, "d": 1, OverflowBudget: 7 + 5 + 1 + 1})
}

func hasKey(m map[string]float64, k string) bool {
	_, ok := m[k]
	return ok
}

// BenchmarkScrape measures one scrape of /metrics (gather and encode, as
// promhttp does; not compressed) with the given budgets active on the
// worker, each with counters, a rejected series and the five gauges:
// series=all gives every budget series of its own, series=default bounds
// them at DefaultBudgetSeries.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		for _, capped := range []bool{false, true} {
			max, name := n, "all"
			if capped {
				max, name = DefaultBudgetSeries, "default"
			}
			b.Run(fmt.Sprintf("budgets=%d/series=%s", n, name), func(b *testing.B) {
				reg := prometheus.NewRegistry()
				m := newMetrics(reg, max)
				c := newCounts()
				for i := range n {
					bc := c.budget(fmt.Sprintf("campaign/%06d", i))
					bc.offered, bc.passed = 2, 1
					bc.refused("paced")
				}
				c.flush(m)
				for i := range n {
					if l := m.series.label(fmt.Sprintf("campaign/%06d", i)); l != OverflowBudget {
						for _, g := range []*prometheus.GaugeVec{m.workingRate, m.idealRate, m.localShare, m.scoreCut, m.lagIdeal} {
							g.WithLabelValues(l).Set(0.5)
						}
					}
				}
				h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true})
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatal(w.Code)
					}
				}
			})
		}
	}
}

// pass counts n events of budget offered and passed.
func (c *counts) pass(budget string, n int) {
	for range n {
		b := c.budget(budget)
		b.offered++
		b.passed++
	}
}
