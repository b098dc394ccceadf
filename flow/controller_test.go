package flow

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mustTree(t *testing.T, bs []Budget, opts ...Option) *Tree {
	t.Helper()
	tree, err := NewTree(bs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func mustOpen(t *testing.T, tree *Tree, source string, now time.Time) *Source {
	t.Helper()
	s, err := tree.Open(source, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// offer feeds n events evenly over [from, from+d) and returns the passes.
func offer(l *Lane, from time.Time, d time.Duration, n int, score float64) int {
	passed := 0
	for i := 0; i < n; i++ {
		if l.Decide(from.Add(d*time.Duration(i)/time.Duration(n)), score).Pass {
			passed++
		}
	}
	return passed
}

func TestBudgetValidation(t *testing.T) {
	cases := []struct {
		name  string
		b     Budget
		field string
	}{
		{"no name", Budget{Target: 1, Begin: t0, End: at(time.Second)}, "name"},
		{"zero target", Budget{Name: "x", Begin: t0, End: at(time.Second)}, "target"},
		{"inf target", Budget{Name: "x", Target: math.Inf(1), Begin: t0, End: at(time.Second)}, "target"},
		{"nan target", Budget{Name: "x", Target: math.NaN(), Begin: t0, End: at(time.Second)}, "target"},
		{"no end", Budget{Name: "x", Target: 1, Begin: t0}, "end"},
		{"end before begin", Budget{Name: "x", Target: 1, Begin: at(time.Second), End: t0}, "end"},
		{"reserve too long", Budget{Name: "x", Target: 1, Begin: t0, End: at(time.Second), Reserve: time.Second}, "reserve"},
		{"negative reserve", Budget{Name: "x", Target: 1, Begin: t0, End: at(time.Second), Reserve: -1}, "reserve"},
		{"period and end", Budget{Name: "x", Target: 1, Period: time.Second, End: at(time.Second)}, "end"},
		{"period reserve", Budget{Name: "x", Target: 1, Period: time.Second, Reserve: time.Second}, "reserve"},
		{"unknown parent", Budget{Name: "x", Target: 1, Period: time.Second, Parent: "nope"}, "parent"},
		{"name too long", Budget{Name: strings.Repeat("n", MaxNameBytes+1), Target: 1, Period: time.Second}, "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTree([]Budget{c.b})
			var be *BudgetError
			if !errors.As(err, &be) || be.Field != c.field || !errors.Is(err, ErrInvalidBudget) {
				t.Fatalf("got %v, want a BudgetError on %q", err, c.field)
			}
		})
	}
	if _, err := NewTree([]Budget{{Name: strings.Repeat("n", MaxNameBytes), Target: 1, Period: time.Second}}); err != nil {
		t.Fatalf("a name of MaxNameBytes: %v", err)
	}
	_, err := NewTree([]Budget{
		{Name: "a", Target: 1, Period: time.Second, Parent: "b"},
		{Name: "b", Target: 1, Period: time.Second, Parent: "a"},
	})
	if !errors.Is(err, ErrInvalidBudget) {
		t.Fatalf("cycle: got %v", err)
	}
	_, err = NewTree([]Budget{{Name: "a", Target: 1, Period: time.Second}, {Name: "a", Target: 1, Period: time.Second}})
	if !errors.Is(err, ErrInvalidBudget) {
		t.Fatalf("duplicate: got %v", err)
	}
	if _, err := NewTree(nil, SyncInterval(0)); err == nil {
		t.Fatal("zero sync interval accepted")
	}
}

// A single node owning the whole cluster paces a window onto the ideal
// curve, step by step at fixed instants.
func TestWindowSingleNode(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 1000, Begin: t0, End: at(100 * time.Second)}})
	l := mustOpen(t, tree, "p0", t0).Lane("c")
	if v := l.Decide(at(-time.Second), 0); v.Pass || v.Reason != ReasonNotStarted || v.By != "c" {
		t.Fatalf("before begin: %+v", v)
	}
	ex := &MemoryExchange{}
	passed := 0
	step := 100 * time.Millisecond
	for k := 0; k < 1000; k++ { // 100 s of 100 ms steps, 100 events per second
		now := at(time.Duration(k) * step)
		if k%10 == 0 {
			_ = ex.Publish(tree.Reports(now, nil))
			tree.Sync(now, ex)
		} else {
			tree.Tune(now)
		}
		passed += offer(l, now, step, 10, 0)
		if k%10 == 9 {
			ideal := 1000 * float64(k+1) / 1000
			if d := math.Abs(float64(passed) - ideal); d > 10 {
				t.Fatalf("t=%v: passed %d, ideal %.0f", now.Add(step).Sub(t0), passed, ideal)
			}
		}
	}
	if passed < 995 || passed > 1000 {
		t.Fatalf("passed %d of 1000", passed)
	}
	if v := l.Decide(at(100*time.Second), 0); v.Reason != ReasonEnded {
		t.Fatalf("after end: %+v", v)
	}
	s := tree.Controller("c").Snapshot()
	if s.Budget != "c" || s.Target != 1000 || s.LocalProportion != 1 {
		t.Fatalf("snapshot: %+v", s)
	}
}

// Once the cluster estimate reaches the target, every event is rejected as
// exhausted.
func TestExhausted(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 10, Begin: t0, End: at(10 * time.Second)}})
	l := mustOpen(t, tree, "p0", t0).Lane("c")
	// a peer already passed the whole target
	ex := &MemoryExchange{}
	_ = ex.Publish([]Report{{Budget: "c", Source: "p1", At: at(time.Second), Since: t0,
		Total: Counters{Offered: 100, Passed: 10}, InPeriod: Counters{Offered: 100, Passed: 10}}})
	tree.Sync(at(time.Second), ex)
	v := l.Decide(at(time.Second), 0)
	if v.Pass || v.Reason != ReasonExhausted {
		t.Fatalf("got %+v", v)
	}
	if s := tree.Controller("c").Snapshot(); !s.Exhausted || s.ClusterPassed < 10 {
		t.Fatalf("snapshot %+v", s)
	}
}

// Nested budgets: the parent's verdict is reported with its name, and a
// pass is counted at every level.
func TestNestedVerdict(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "account", Target: 5, Begin: t0, End: at(10 * time.Second)},
		{Name: "campaign", Target: 1e6, Begin: t0, End: at(10 * time.Second), Parent: "account"},
	})
	src := mustOpen(t, tree, "p0", t0)
	l := src.Lane("campaign")
	tree.Tune(t0)
	offer(l, t0, time.Second, 100, 0)
	tree.Tune(at(time.Second))
	// the campaign would pass everything; the account lets 5 through in all
	passed := 0
	for k := 10; k < 100; k++ {
		now := at(time.Duration(k) * 100 * time.Millisecond)
		tree.Tune(now)
		passed += offer(l, now, 100*time.Millisecond, 10, 0)
	}
	if passed == 0 || passed > 5 {
		t.Fatalf("passed %d, want 1..5", passed)
	}
	ex := &MemoryExchange{}
	_ = ex.Publish([]Report{{Budget: "account", Source: "p9", At: at(time.Second), Since: t0,
		Total: Counters{Passed: 5}, InPeriod: Counters{Passed: 5}}})
	tree.Sync(at(time.Second), ex)
	v := l.Decide(at(time.Second), 0)
	if v.Pass || v.By != "account" || v.Reason != ReasonExhausted {
		t.Fatalf("got %+v", v)
	}
	if got := tree.Controllers(); got[0].Budget().Name != "account" {
		t.Fatalf("controllers not parents-first: %v", got[0].Budget().Name)
	}
	if src.Lane("nope") != nil {
		t.Fatal("unknown budget has a lane")
	}
}

// Period budgets reset every period; counters restored on Open continue.
func TestPeriodRollAndRestore(t *testing.T) {
	b := Budget{Name: "p", Target: 50, Period: 10 * time.Second, Begin: t0}
	tree := mustTree(t, []Budget{b})
	src := mustOpen(t, tree, "p0", t0)
	l := src.Lane("p")
	passedIn := func(from time.Duration) int {
		n := 0
		for s := 0; s < 100; s++ { // 10 s in 100 ms steps, 10 events each
			now := at(from + time.Duration(s)*100*time.Millisecond)
			tree.Tune(now)
			n += offer(l, now, 100*time.Millisecond, 10, 0)
		}
		return n
	}
	for p := 0; p < 3; p++ {
		got := passedIn(time.Duration(p) * 10 * time.Second)
		if got < 45 || got > 50 {
			t.Fatalf("period %d: passed %d, want ≈50 and never above", p, got)
		}
	}
	reps := tree.Close(src, at(30*time.Second))
	if len(reps) != 1 || reps[0].Period != 2 || reps[0].Total.Offered != 3000 {
		t.Fatalf("close reports %+v", reps)
	}
	// another node takes the source over and continues from its counters
	other := mustTree(t, []Budget{b})
	s2, err := other.Open("p0", at(30*time.Second), func(name string) (Report, bool) { return reps[0], name == "p" })
	if err != nil {
		t.Fatal(err)
	}
	if other.Reports(at(30*time.Second), nil) != nil {
		t.Fatal("a lane before the budget's first event")
	}
	s2.Lane("p") // its first event opens it
	r := other.Reports(at(30*time.Second), nil)
	if len(r) != 1 || r[0].Total != reps[0].Total || !r[0].Since.Equal(reps[0].Since) {
		t.Fatalf("restored %+v, want %+v", r, reps[0])
	}
	if _, err := other.Open("p0", at(30*time.Second), nil); !errors.Is(err, ErrSourceOpen) {
		t.Fatalf("second open: %v", err)
	}
}

// The ideal curve of the schedule, at fixed instants.
func TestScheduleIdeal(t *testing.T) {
	s := newSchedule(Budget{Target: 100, Begin: t0, End: at(100 * time.Second), Reserve: 20 * time.Second})
	_, start, end := s.period(at(5 * time.Second).UnixNano())
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{-time.Second, 0}, {0, 0}, {40 * time.Second, 50}, {80 * time.Second, 100}, {90 * time.Second, 100}, {200 * time.Second, 100}} {
		if got := s.ideal(at(c.at).UnixNano(), start, end); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("ideal(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	p := newSchedule(Budget{Target: 10, Period: time.Minute})
	idx, st, en := p.period(time.Unix(-30, 0).UnixNano())
	if idx != -1 || st != time.Unix(-60, 0).UnixNano() || en != 0 {
		t.Fatalf("negative period: %d %d %d", idx, st, en)
	}
}

// The sketch's bins preserve order, and its quantiles are close to exact.
func TestSketch(t *testing.T) {
	prev := -1
	for _, x := range []float64{math.Inf(-1), -1e12, -3, -1, -0.5, -1e-12, 0, 1e-12, 0.25, 0.5, 0.51, 1, 3, 1e12, math.Inf(1)} {
		b := scoreBin(x)
		if b < prev {
			t.Fatalf("bin(%v)=%d below previous %d", x, b, prev)
		}
		lo, hi := binBounds(b)
		if !math.IsInf(x, 0) && math.Abs(x) < 1e9 && math.Abs(x) > 1e-9 && (x < lo || x > hi) {
			t.Fatalf("%v outside its bin [%v, %v]", x, lo, hi)
		}
		prev = b
	}
	ls := newLaneSketch()
	for i := 0; i < 10000; i++ {
		ls.add(float64(i) / 10000)
	}
	var s sketch
	s.init()
	s.merge(ls)
	for _, p := range []float64{0.01, 0.1, 0.5, 0.9} {
		if got, want := s.upper(p), 1-p; math.Abs(got-want) > 0.002 {
			t.Errorf("upper(%v) = %v, want %v", p, got, want)
		}
	}
	if !math.IsInf(s.upper(0), 1) || !math.IsInf(s.upper(1), -1) {
		t.Error("upper at the extremes")
	}
}

// The conversion fit finds the ratio and the delay of delayed rewards.
func TestConversionFit(t *testing.T) {
	c := newConversion(240)
	sec := int64(time.Second)
	for k := int64(0); k <= 60; k++ {
		passed := float64(100 * k)
		rewards := 0.0
		if k > 2 {
			rewards = 0.1 * float64(100*(k-2))
		}
		c.add(k*sec, passed, rewards)
	}
	c.fit(int64(30 * time.Second))
	if math.Abs(c.ratio-0.1) > 0.005 || math.Abs(float64(c.delay-2*sec)) > float64(sec)/2 {
		t.Fatalf("fit ratio %.4f delay %v, want 0.1 and 2s", c.ratio, time.Duration(c.delay))
	}
}

// Many goroutines decide on their own lanes while the controller tunes,
// syncs and reports: no race, no lost count.
func TestConcurrentLanes(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "account", Target: 1e6, Begin: t0, End: at(time.Hour)},
		{Name: "c", Target: 1e5, Begin: t0, End: at(time.Hour), Parent: "account", Scored: true},
	})
	ex := &MemoryExchange{}
	const workers, events = 4, 20000
	var wg sync.WaitGroup
	passes := make([]int, workers)
	for w := 0; w < workers; w++ {
		src := mustOpen(t, tree, "p"+string(rune('0'+w)), t0)
		wg.Add(1)
		go func(w int, l *Lane) {
			defer wg.Done()
			for i := 0; i < events; i++ {
				if l.Decide(at(time.Duration(i)*time.Millisecond), float64(i%100)).Pass {
					passes[w]++
				}
			}
		}(w, src.Lane("c"))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; k < 200; k++ {
			now := at(time.Duration(k) * 100 * time.Millisecond)
			_ = ex.Publish(tree.Reports(now, nil))
			tree.Sync(now, ex)
			tree.Tune(now)
			_ = tree.Controller("c").Snapshot()
		}
	}()
	wg.Wait()
	<-done
	var off, pas uint64
	for _, r := range tree.Reports(at(time.Hour), nil) {
		if r.Budget == "c" {
			off += r.Total.Offered
			pas += r.Total.Passed
		}
	}
	sum := 0
	for _, p := range passes {
		sum += p
	}
	if off != workers*events || pas != uint64(sum) {
		t.Fatalf("counted offered %d passed %d, want %d and %d", off, pas, workers*events, sum)
	}
}

// Before any traffic is measured, a lane passes at its share of the ideal
// rate: a backlog met at start is neither passed nor rejected wholesale.
func TestColdStart(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 3600, Begin: t0, End: at(time.Hour)}}) // 1/s
	// the controller tunes for a while with no lane: idle
	for k := 0; k < 20; k++ {
		tree.Tune(at(time.Duration(k) * 100 * time.Millisecond))
	}
	l := mustOpen(t, tree, "p0", at(2*time.Second)).Lane("c")
	// a backlog of 10,000 events within 10 ms, then 1,000 more over 1.5 s
	// before the first tune: a token bucket at 1/s starting between 0 and 1
	// token (the lane's stagger) passes 1 or 2.
	got := offer(l, at(2*time.Second), 10*time.Millisecond, 10000, 0)
	got += offer(l, at(2010*time.Millisecond), 1500*time.Millisecond, 1000, 0)
	if got < 1 || got > 2 {
		t.Fatalf("cold backlog: %d passed, want the 1-2 of a token bucket at 1/s", got)
	}
	// once tuned, the measured rate takes over: 10,000 events/s → p ≈ 1e-4
	tree.Tune(at(3600 * time.Millisecond))
	if s := tree.Controller("c").Snapshot(); s.ClusterRate < 1000 || s.WorkingPassRate <= 0 || s.WorkingPassRate > 0.01 {
		t.Fatalf("after the first tune: rate %.0f, working pass rate %v", s.ClusterRate, s.WorkingPassRate)
	}
	// events before the window count as traffic: the rate is known at begin
	tree2 := mustTree(t, []Budget{{Name: "c", Target: 100, Begin: at(10 * time.Second), End: at(110 * time.Second)}})
	l2 := mustOpen(t, tree2, "p0", t0).Lane("c")
	for k := 0; k < 100; k++ {
		now := at(time.Duration(k) * 100 * time.Millisecond)
		tree2.Tune(now)
		offer(l2, now, 100*time.Millisecond, 10, 0)
	}
	tree2.Tune(at(10 * time.Second))
	if s := tree2.Controller("c").Snapshot(); math.Abs(s.ClusterRate-100) > 1 || math.Abs(s.WorkingPassRate-0.01) > 0.002 {
		t.Fatalf("at begin: rate %.1f (want 100), working pass rate %.4f (want 0.01)", s.ClusterRate, s.WorkingPassRate)
	}
}

// A tune that comes late must not let a catch-up rate run on: past two
// tune intervals, lanes pace at the ideal fraction; past twice StaleAfter
// more (a tuner frozen with its process), a budget near enough to its
// target to be paced passes nothing until the tuner runs again.
func TestLateTune(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 1000, Begin: t0, End: at(100 * time.Second)}}) // 10/s
	l := mustOpen(t, tree, "p0", t0).Lane("c")
	// 200 events/s (too many to rest: restUntil); the budget starts 10 s
	// late in its window: far behind
	for k := 0; k < 10; k++ {
		now := at(10*time.Second + time.Duration(k)*100*time.Millisecond)
		tree.Tune(now)
		offer(l, now, 100*time.Millisecond, 20, 0)
	}
	last := at(11 * time.Second)
	tree.Tune(last)
	s := tree.Controller("c").Snapshot()
	if s.WorkingPassRate < 0.1 {
		t.Fatalf("working pass rate %.3f: the controller is not catching up", s.WorkingPassRate)
	}
	// no tune for the next 5 s: 1,000 events pass at the ideal 5% only
	got := offer(l, last.Add(time.Second), 5*time.Second, 1000, 0)
	if got < 45 || got > 55 {
		t.Fatalf("%d of 1000 passed while the controller was late, want ≈50 (the ideal 5%%)", got)
	}
	// none 7 s on: the allowance is that old
	if got := offer(l, last.Add(7*time.Second), time.Second, 100, 0); got != 0 {
		t.Fatalf("%d of 100 passed 7 s after the last tune, want none", got)
	}
	tree.Tune(last.Add(8 * time.Second))
	if got := offer(l, last.Add(8*time.Second), time.Second, 100, 0); got == 0 {
		t.Fatalf("none of 100 passed after the tuner ran again")
	}
}

// A first batch may carry an instant earlier than the lane's opening (the
// batch was timed when polled): the cold bucket starts full, so a budget
// with room passes it.
func TestColdBatchBeforeOpen(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 1e9, Begin: at(-time.Hour), End: at(time.Hour)}})
	l := mustOpen(t, tree, "p0", at(time.Second)).Lane("c")
	if got := offer(l, t0, 0, 1000, 0); got != 1000 {
		t.Fatalf("%d of 1000 passed, want all (the budget has room for ~280,000 a second)", got)
	}
}

// A budget smaller than its node's lane count must not pass one event per
// lane: the lanes' first credits and cold tokens are staggered, so their
// passes spread out over the ideal course instead of coming all at once.
func TestTinyBudgetManyLanes(t *testing.T) {
	for _, c := range []struct {
		name   string
		target float64
	}{{"one per hour", 1}, {"five per hour", 5}} {
		t.Run(c.name, func(t *testing.T) {
			tree := mustTree(t, []Budget{{Name: "c", Target: c.target, Period: time.Hour}})
			var lanes []*Lane
			for i := 0; i < 12; i++ {
				lanes = append(lanes, mustOpen(t, tree, "events/"+string(rune('a'+i)), t0).Lane("c"))
			}
			// 12 lanes at 100 events/s each for the whole hour; tune every 100 ms.
			passed := 0
			var firstMinute int
			for k := 0; k < 36000; k++ {
				now := at(time.Duration(k) * 100 * time.Millisecond)
				tree.Tune(now)
				for _, l := range lanes {
					passed += offer(l, now, 100*time.Millisecond, 10, 0)
				}
				if k == 599 {
					firstMinute = passed
				}
			}
			t.Logf("%d passed in the hour, %d in the first minute", passed, firstMinute)
			if passed > int(c.target) {
				t.Errorf("%d passed in the hour, target %v", passed, c.target)
			}
			if passed < int(c.target)-1 {
				t.Errorf("%d passed in the hour, target %v: too few", passed, c.target)
			}
			if firstMinute > 1 {
				t.Errorf("%d passed in the first minute; the ideal is %.2f", firstMinute, c.target/60)
			}
		})
	}
}
