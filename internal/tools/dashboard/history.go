package dashboard

import (
	"math"
	"time"
)

// The stats topic holds counters as they are now, not curves: the
// dashboard samples them and keeps, per budget, the curve of its current
// window or period in memory.
//
// Memory bound: a point takes 12 bytes. All curves together keep at most
// max(DefaultMaxPoints, B x minCurve) points, B the number of budgets, plus the
// pinned curves (at most maxPinned x maxCurve points); a curve's slice
// has room for at most twice its limit (append's doubling). With the
// defaults that is at most 2 x 12 B x (max(2,000,000, B x 32) + 64 x
// 4,096): 54 MB up to 62,500 budgets, 83 MB at 100,000, when every budget
// changes at every sample (TestHistoryBound measures 38 MB of room at
// 100,000); a budget whose counters do not move keeps two points for its
// flat run.
//
// Resolution: each curve keeps its newest half at the sampling interval;
// the older half is thinned by two each time the curve fills up, keeping
// of each pair the point farther from the ideal course, so that older
// spans get coarser while their excursions stay visible. A budget whose
// page is open (pinned) keeps up to maxCurve points.
const (
	minCurve  = 32
	maxCurve  = 4096
	maxPinned = 64
	pinFor    = 10 * time.Minute // a budget's page asked for within this stays pinned
)

// point is one sample: t in tenths of a second since the history's epoch
// (int32: 6.8 years), achieved (passes or rewards) and passes.
type point struct {
	t    int32
	a, p float32
}

// curve is one budget's samples since start (its window or period).
type curve struct {
	start time.Time
	pts   []point
}

// history holds the curves. It is not safe for concurrent use: the
// Server guards it.
type history struct {
	epoch     time.Time
	maxPoints int
	curves    map[string]*curve
	pinned    map[string]time.Time // budget: when its page was last asked for
	perCurve  int                  // the limit of an unpinned curve, set by limits
}

func newHistory(epoch time.Time, maxPoints int) *history {
	return &history{epoch: epoch, maxPoints: maxPoints, curves: map[string]*curve{}, pinned: map[string]time.Time{}, perCurve: maxCurve}
}

// tick converts an instant to the history's units.
func (h *history) tick(t time.Time) int32 {
	d := t.Sub(h.epoch) / (100 * time.Millisecond)
	return int32(max(min(d, math.MaxInt32), math.MinInt32))
}

// at converts back.
func (h *history) at(t int32) time.Time {
	return h.epoch.Add(time.Duration(t) * 100 * time.Millisecond)
}

// limits sets the per-curve limit for the next samples from the number of
// budgets, and forgets pins older than pinFor.
func (h *history) limits(budgets int, now time.Time) {
	h.perCurve = maxCurve
	if budgets > 0 {
		h.perCurve = min(max(h.maxPoints/budgets, minCurve), maxCurve)
	}
	for name, at := range h.pinned {
		if now.Sub(at) > pinFor {
			delete(h.pinned, name)
		}
	}
}

// pin keeps a budget's curve at full resolution for pinFor from now. At
// most maxPinned budgets are pinned: the oldest pin makes room.
func (h *history) pin(name string, now time.Time) {
	if _, ok := h.pinned[name]; !ok && len(h.pinned) >= maxPinned {
		oldest, at := "", now
		for n, t := range h.pinned {
			if !t.After(at) {
				oldest, at = n, t
			}
		}
		delete(h.pinned, oldest)
	}
	h.pinned[name] = now
}

// add appends a sample of a budget whose current window or period began
// at start; ideal is the budget's ideal course (for thinning).
func (h *history) add(name string, start, now time.Time, achieved, passes float64, ideal func(time.Time) float64) {
	c := h.curves[name]
	if c == nil {
		c = &curve{start: start}
		h.curves[name] = c
	}
	if !c.start.Equal(start) { // a new period: a new curve
		c.start, c.pts = start, c.pts[:0]
	}
	p := point{t: h.tick(now), a: float32s(achieved), p: float32s(passes)}
	if n := len(c.pts); n > 0 && p.t <= c.pts[n-1].t {
		return // not after the last sample
	}
	if n := len(c.pts); n >= 2 && c.pts[n-1].a == p.a && c.pts[n-2].a == p.a && c.pts[n-1].p == p.p && c.pts[n-2].p == p.p {
		c.pts[n-1].t = p.t // a flat run keeps its two ends
		return
	}
	limit := h.perCurve
	if _, ok := h.pinned[name]; ok {
		limit = maxCurve
	}
	for len(c.pts) >= limit { // thin first: the slice need not grow past the limit
		c.pts = h.thin(c.pts, limit, ideal)
	}
	if cap(c.pts) > 2*limit { // the limit went down (more budgets, a pin expired)
		c.pts = append(make([]point, 0, limit), c.pts...)
	}
	c.pts = append(c.pts, p)
}

// thin halves the older points of pts (all but the newest limit/2; the
// first point, the curve's origin, stays), keeping of each pair the point
// farther from the ideal course.
func (h *history) thin(pts []point, limit int, ideal func(time.Time) float64) []point {
	keep := limit / 2
	old := len(pts) - keep
	off := func(q point) float64 { return math.Abs(float64(q.a) - ideal(h.at(q.t))) }
	w := 1
	for i := 1; i < old; i += 2 {
		q := pts[i]
		if i+1 < old && off(pts[i+1]) > off(q) {
			q = pts[i+1]
		}
		pts[w] = q
		w++
	}
	return append(pts[:w], pts[old:]...)
}

// forget drops the curves of budgets not in keep.
func (h *history) forget(keep func(string) bool) {
	for name := range h.curves {
		if !keep(name) {
			delete(h.curves, name)
			delete(h.pinned, name)
		}
	}
}

// points returns a copy of a budget's curve.
func (h *history) points(name string) []point {
	c := h.curves[name]
	if c == nil {
		return nil
	}
	return append([]point(nil), c.pts...)
}

// spread returns up to n of a budget's points (appended to dst),
// spread evenly over its curve: for sparklines.
func (h *history) spread(name string, n int, dst []point) []point {
	c := h.curves[name]
	if c == nil || len(c.pts) == 0 {
		return dst
	}
	if len(c.pts) <= n {
		return append(dst, c.pts...)
	}
	for i := range n {
		dst = append(dst, c.pts[i*(len(c.pts)-1)/(n-1)])
	}
	return dst
}

// size returns the number of points held and of budgets.
func (h *history) size() (points, budgets int) {
	for _, c := range h.curves {
		points += len(c.pts)
	}
	return points, len(h.curves)
}

// float32s converts f to a float32 point value, within its range (NaN as
// 0), so that no curve holds an infinity.
func float32s(f float64) float32 {
	if math.IsNaN(f) {
		return 0
	}
	return float32(math.Max(-math.MaxFloat32, math.Min(math.MaxFloat32, f)))
}
