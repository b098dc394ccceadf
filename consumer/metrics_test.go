package consumer

import (
	"math"
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

// TestSnapshotGauges checks a budget's gauges across a sweep: the tuner
// sets them, a sweep of the idle budget deletes them, and the next
// snapshot makes them again (not writing to the deleted ones).
func TestSnapshotGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	a := map[string]string{"budget": "a"}
	m.snapshot(flow.Snapshot{Budget: "a", WorkingPassRate: 0.25, IdealPassRate: 0.5, Cut: math.Inf(1)})
	m.snapshot(flow.Snapshot{Budget: "a", WorkingPassRate: 0.75, IdealPassRate: 0.5, Lag: 3})
	for name, v := range map[string]float64{"throttler_working_pass_rate": 0.75, "throttler_ideal_pass_rate": 0.5, "throttler_lag_behind_ideal": 3, "throttler_score_cut": 0} {
		if got, ok := gauge(t, reg, name, a); !ok || got != v {
			t.Fatalf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if n := m.sweep(time.Unix(1e9, 0), time.Minute); n != 1 {
		t.Fatalf("sweep deleted %d budgets' series, want 1", n)
	}
	if got, ok := gauge(t, reg, "throttler_working_pass_rate", a); ok {
		t.Fatalf("working pass rate %v after the sweep, want no series", got)
	}
	m.snapshot(flow.Snapshot{Budget: "a", WorkingPassRate: 0.5, Cut: math.NaN()})
	if got, ok := gauge(t, reg, "throttler_working_pass_rate", a); !ok || got != 0.5 {
		t.Fatalf("working pass rate %v (present %v) after a new snapshot, want 0.5", got, ok)
	}
	if got, _ := gauge(t, reg, "throttler_score_cut", a); got != math.MaxFloat64 {
		t.Fatalf("score cut %v for NaN, want MaxFloat64", got)
	}
}
