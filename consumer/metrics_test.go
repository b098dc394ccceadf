package consumer

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throttler/throttler/flow"
)

// TestCountsFlush checks a partition's counts against the metrics they
// flush to: the counters a budget keeps between flushes add up, a budget
// that only refuses gets no offered series, a sweep that deletes a
// budget's series makes the next flush start new ones (and not add to the
// deleted ones), and budgets idle for keepIdleFlushes are forgotten.
func TestCountsFlush(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	c := newCounts()
	pass := func(budget string, n int) {
		for range n {
			b := c.budget(budget)
			b.offered++
			b.passed++
		}
	}
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
	m := newMetrics(reg)
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
