package dashboard

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func flat(time.Time) float64 { return 0 }

// TestHistoryThinsOlderPoints: a curve past its limit keeps its origin,
// its newest half at full resolution and, of older pairs, the point
// farther from the ideal course.
func TestHistoryThinsOlderPoints(t *testing.T) {
	h := newHistory(begin, 64) // 64 points for one budget: limit 64
	h.limits(1, begin)
	if h.perCurve != 64 {
		t.Fatalf("per-curve limit %d", h.perCurve)
	}
	spike := 37 // a sample far off the (flat) ideal course
	for i := range 200 {
		v := float64(i)
		if i == spike {
			v = 1000
		}
		h.add("b", begin, begin.Add(time.Duration(i)*time.Second), v, v, flat)
	}
	pts := h.points("b")
	if len(pts) > 64 || len(pts) < 32 {
		t.Fatalf("%d points, limit 64", len(pts))
	}
	if pts[0].t != 0 || pts[0].a != 0 {
		t.Errorf("origin lost: %+v", pts[0])
	}
	for i := 1; i < 32; i++ { // the newest 32 at full resolution
		if got, want := pts[len(pts)-i].t, int32(10*(200-i)); got != want {
			t.Fatalf("newest point %d at tick %d, want %d", i, got, want)
		}
	}
	found := false
	for _, p := range pts {
		found = found || p.a == 1000
	}
	if !found {
		t.Error("the spike was thinned away")
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].t <= pts[i-1].t {
			t.Fatalf("points out of order at %d: %+v", i, pts)
		}
	}
}

// TestHistoryFlatRunsAndPeriods: a run of equal samples keeps its two
// ends; a new period starts a new curve; samples not after the last are
// dropped.
func TestHistoryFlatRunsAndPeriods(t *testing.T) {
	h := newHistory(begin, 1000)
	h.limits(1, begin)
	for i := range 50 {
		h.add("b", begin, begin.Add(time.Duration(i)*time.Second), 7, 7, flat)
	}
	if pts := h.points("b"); len(pts) != 2 || pts[0].t != 0 || pts[1].t != 490 {
		t.Fatalf("flat run %+v", pts)
	}
	h.add("b", begin, begin.Add(49*time.Second), 9, 9, flat) // not after the last
	h.add("b", begin, begin.Add(50*time.Second), 8, 8, flat)
	if pts := h.points("b"); len(pts) != 3 || pts[2].a != 8 {
		t.Fatalf("after the run %+v", pts)
	}
	next := begin.Add(time.Minute)
	h.add("b", next, next, 0, 0, flat)
	if pts := h.points("b"); len(pts) != 1 || pts[0].t != 600 {
		t.Fatalf("new period %+v", pts)
	}
	h.forget(func(string) bool { return false })
	if p, b := h.size(); p != 0 || b != 0 {
		t.Fatalf("forget left %d points of %d budgets", p, b)
	}
}

// TestHistoryBound: 100,000 budgets that all change at every sample stay
// within the stated bound (minCurve points each past DefaultMaxPoints), and a
// pinned budget keeps more.
func TestHistoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("samples 100,000 budgets 100 times")
	}
	const budgets, samples = 100_000, 100
	h := newHistory(begin, DefaultMaxPoints)
	names := make([]string, budgets)
	for i := range names {
		names[i] = fmt.Sprintf("b%06d", i)
	}
	h.limits(budgets, begin)
	h.pin("b000042", begin)
	for k := range samples {
		now := begin.Add(time.Duration(k) * time.Second)
		for i, n := range names {
			v := float64(k*(i%7+1)) + math.Sin(float64(k+i))
			h.add(n, begin, now, v, v, flat)
		}
	}
	points, _ := h.size()
	bound := max(DefaultMaxPoints, budgets*minCurve) + maxPinned*maxCurve
	if points > bound {
		t.Fatalf("%d points held, bound %d", points, bound)
	}
	if n := len(h.points("b000042")); n != samples {
		t.Errorf("pinned budget keeps %d points, want all %d", n, samples)
	}
	if n := len(h.points("b000043")); n > minCurve {
		t.Errorf("unpinned budget keeps %d points, limit %d", n, minCurve)
	}
	var capacity int
	for _, c := range h.curves {
		capacity += cap(c.pts)
	}
	if capacity > 2*bound {
		t.Errorf("slices hold room for %d points, bound 2 x %d", capacity, bound)
	}
	t.Logf("%d budgets x %d samples: %d points held (%.1f MB), room for %d (%.1f MB)",
		budgets, samples, points, float64(points*12)/1e6, capacity, float64(capacity*12)/1e6)
}
