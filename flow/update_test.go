package flow

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// run drives one source at 100 events/s from `from` for d, syncing every
// second and tuning every 100ms, refreshing the source's lanes before each
// step, and returns the passes of budget.
func run(tree *Tree, src *Source, ex *MemoryExchange, budget string, from time.Time, d time.Duration) int {
	passed := 0
	step := 100 * time.Millisecond
	for k := 0; k < int(d/step); k++ {
		now := from.Add(time.Duration(k) * step)
		src.Refresh(now, nil)
		if k%10 == 0 {
			_ = ex.Publish(tree.Reports(now, nil))
			tree.Sync(now, ex)
		} else {
			tree.Tune(now)
		}
		passed += offer(src.Lane(budget), now, step, 10, 1)
	}
	return passed
}

// start runs a tree of budget b on one source for d from t0 and checks
// that the passes are within [lo, hi].
func start(t *testing.T, b Budget, d time.Duration, lo, hi int) (*Tree, *Source, *MemoryExchange, int) {
	t.Helper()
	tree := mustTree(t, []Budget{b})
	src := mustOpen(t, tree, "p0", t0)
	ex := &MemoryExchange{}
	n := run(tree, src, ex, b.Name, t0, d)
	if n < lo || n > hi {
		t.Fatalf("first %v passed %d, want [%d, %d]", d, n, lo, hi)
	}
	return tree, src, ex, n
}

// A new target is paced from what was already achieved: the controller
// keeps its counters, and the window ends on the new target.
func TestUpdateTarget(t *testing.T) {
	b := Budget{Name: "c", Target: 1000, Begin: t0, End: at(100 * time.Second)}
	tree, src, ex, first := start(t, b, 50*time.Second, 490, 510)
	b.Target = 2000
	ch, err := tree.Update([]Budget{b}, at(50*time.Second))
	if err != nil || len(ch.Changed) != 1 || len(ch.Added)+len(ch.Deleted) != 0 {
		t.Fatalf("update: %+v, %v", ch, err)
	}
	s := tree.Controller("c").Snapshot()
	if s.Target != 2000 || s.ClusterPassed != float64(first) {
		t.Fatalf("after the change: target %v, passed %v (want 2000, %d)", s.Target, s.ClusterPassed, first)
	}
	// 1500 more in the second half: 30 of the 100 events/s pass then.
	second := run(tree, src, ex, "c", at(50*time.Second), 50*time.Second)
	if total := first + second; total < 1980 || total > 2000 {
		t.Fatalf("passed %d in all, want 2000 (first half %d)", total, first)
	}
	if got := tree.Budgets()[0].Target; got != 2000 {
		t.Fatalf("Budgets: target %v", got)
	}
	if tree.Version() != 1 {
		t.Fatalf("version %d, want 1", tree.Version())
	}
	// The same set again changes nothing.
	if ch, err := tree.Update([]Budget{b}, at(100*time.Second)); err != nil || !ch.Empty() || tree.Version() != 1 {
		t.Fatalf("no-op update: %+v, %v, version %d", ch, err, tree.Version())
	}
}

// Lanes of a new budget open on its first event on each source; lanes of a
// deleted budget stop at the next Refresh.
func TestUpdateAddDelete(t *testing.T) {
	a := Budget{Name: "a", Target: 100, Period: time.Second}
	b := Budget{Name: "b", Target: 100, Period: time.Second}
	tree := mustTree(t, []Budget{a})
	s1, s2 := mustOpen(t, tree, "p1", t0), mustOpen(t, tree, "p2", t0)
	if ch, err := tree.Update([]Budget{a, b}, at(time.Second)); err != nil || len(ch.Added) != 1 || ch.Added[0] != "b" {
		t.Fatalf("add: %+v, %v", ch, err)
	}
	if s1.Peek("b") != nil {
		t.Fatal("a lane of b before its first event")
	}
	for _, s := range []*Source{s1, s2} {
		if !s.Refresh(at(time.Second), nil) || s.Lane("b") == nil || s.Lane("a") == nil {
			t.Fatalf("%s: no lane of b after Refresh", s.Name())
		}
		if s.Refresh(at(time.Second), nil) {
			t.Fatal("a second Refresh changed something")
		}
		if v := s.Lane("b").Decide(at(time.Second), 0); !v.Pass {
			t.Fatalf("first event of the new budget: %+v", v)
		}
	}
	if got := budgetsOf(tree.Reports(at(time.Second), nil)); got["b"] != 2 || got["a"] != 2 {
		t.Fatalf("reports per budget %v, want 2 of a and 2 of b", got)
	}

	old := s1.Lane("a")
	if ch, err := tree.Update([]Budget{b}, at(2*time.Second)); err != nil || len(ch.Deleted) != 1 || ch.Deleted[0] != "a" {
		t.Fatalf("delete: %+v, %v", ch, err)
	}
	if tree.Controller("a") != nil {
		t.Fatal("controller of a still in the tree")
	}
	// Until its source refreshes, the old lane still decides.
	if v := old.Decide(at(2*time.Second), 0); v.By != "" && v.By != "a" {
		t.Fatalf("old lane: %+v", v)
	}
	s1.Refresh(at(2*time.Second), nil)
	s2.Refresh(at(2*time.Second), nil)
	if s1.Lane("a") != nil || s2.Lane("a") != nil {
		t.Fatal("lane of a deleted budget still on its source")
	}
	if got := budgetsOf(tree.Reports(at(2*time.Second), nil)); got["a"] != 0 || got["b"] != 2 {
		t.Fatalf("reports per budget %v after deleting a", got)
	}
	// Re-adding a makes a new controller: counters start from zero.
	if _, err := tree.Update([]Budget{b, a}, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	s1.Refresh(at(3*time.Second), nil)
	if l := s1.Lane("a"); l == nil || l == old || l.report(at(3*time.Second).UnixNano()).Total.Offered != 0 {
		t.Fatal("re-added budget: no fresh lane")
	}
	if rs := tree.Close(s1, at(4*time.Second)); len(rs) != 2 {
		t.Fatalf("close: %d reports, want 2", len(rs))
	}
}

func budgetsOf(rs []Report) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Budget]++
	}
	return m
}

// An invalid set changes nothing and names the budget and field.
func TestUpdateInvalid(t *testing.T) {
	acct := Budget{Name: "acct", Target: 100, Period: time.Second}
	child := Budget{Name: "child", Target: 50, Period: time.Second, Parent: "acct"}
	tree := mustTree(t, []Budget{acct, child})
	cases := []struct {
		name   string
		set    []Budget
		budget string
		field  string
	}{
		{"delete a parent still in use", []Budget{child}, "child", "parent"},
		{"bad target", []Budget{acct, {Name: "child", Target: -1, Period: time.Second}}, "child", "target"},
		{"duplicate", []Budget{acct, child, acct}, "acct", "name"},
		{"cycle", []Budget{{Name: "acct", Target: 1, Period: time.Second, Parent: "child"}, child}, "acct", "parent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tree.Update(c.set, at(time.Second))
			var be *BudgetError
			if !errors.As(err, &be) || be.Field != c.field || be.Budget != c.budget {
				t.Fatalf("got %v, want an error on %s.%s", err, c.budget, c.field)
			}
			if b, _ := tree.Budget("child"); tree.Version() != 0 || tree.Len() != 2 || b.Target != 50 {
				t.Fatal("a refused update changed the tree")
			}
		})
	}
}

// A budget moved under another parent asks the new parent from its next
// Refresh on.
func TestUpdateParent(t *testing.T) {
	free := Budget{Name: "free", Target: 1e6, Period: time.Second}
	tight := Budget{Name: "tight", Target: 1, Period: time.Hour}
	child := Budget{Name: "child", Target: 1e6, Period: time.Second}
	tree := mustTree(t, []Budget{free, tight, child})
	// tight's one pass of this hour is spent already (restored).
	hour := t0.UnixNano() / int64(time.Hour)
	spent := Counters{Offered: 1, Passed: 1}
	src, err := tree.Open("p", t0, func(b string) (Report, bool) {
		if b != "tight" {
			return Report{}, false
		}
		return Report{Budget: b, Source: "p", At: t0, Since: t0, Total: spent, Period: hour, InPeriod: spent}, true
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := src.Lane("tight").Decide(t0, 0); v.Pass {
		t.Fatal("tight: a second pass in the hour")
	}
	tree.Tune(at(100 * time.Millisecond))
	if v := src.Lane("child").Decide(at(100*time.Millisecond), 0); !v.Pass {
		t.Fatalf("child without parent: %+v", v)
	}
	child.Parent = "tight"
	if _, err := tree.Update([]Budget{free, tight, child}, at(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	src.Refresh(at(200*time.Millisecond), nil)
	v := src.Lane("child").Decide(at(300*time.Millisecond), 0)
	if v.Pass || v.By != "tight" {
		t.Fatalf("child under an exhausted parent: %+v", v)
	}
}

// Turning score-tiered selection off does not leave lanes cutting by a
// score cut their controller no longer tunes; turning it on gives lanes a
// sketch at their next Refresh.
func TestUpdateScored(t *testing.T) {
	b := Budget{Name: "s", Target: 500, Begin: t0, End: at(100 * time.Second), Scored: true}
	tree := mustTree(t, []Budget{b})
	src := mustOpen(t, tree, "p", t0)
	ex := &MemoryExchange{}
	run(tree, src, ex, "s", t0, 10*time.Second)
	b.Scored = false
	if _, err := tree.Update([]Budget{b}, at(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Before the lane refreshes: paced, never cut by score.
	l := src.Lane("s")
	for i := 0; i < 100; i++ {
		if v := l.Decide(at(10*time.Second+time.Duration(i)*time.Millisecond), 0); v.Reason == ReasonScore {
			t.Fatalf("event %d rejected by score after scoring was turned off", i)
		}
	}
	src.Refresh(at(11*time.Second), nil)
	if l.sk != nil {
		t.Fatal("lane kept its sketch")
	}
	b.Scored = true
	if _, err := tree.Update([]Budget{b}, at(12*time.Second)); err != nil {
		t.Fatal(err)
	}
	src.Refresh(at(12*time.Second), nil)
	if l.sk == nil || !l.c.params.Load().scored {
		t.Fatal("no sketch after scoring was turned back on")
	}
}

// A period budget whose period changes keeps the counts of the period the
// lane was in.
func TestUpdatePeriod(t *testing.T) {
	b := Budget{Name: "p", Target: 100, Period: 10 * time.Second}
	tree, src, ex, first := start(t, b, 5*time.Second, 40, 60)
	b.Period, b.Target = time.Minute, 200
	if _, err := tree.Update([]Budget{b}, at(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	src.Refresh(at(5*time.Second), nil)
	r := src.Lane("p").report(at(5 * time.Second).UnixNano())
	wantIdx := t0.UnixNano() / int64(time.Minute)
	if r.Period != wantIdx || r.InPeriod.Passed != uint64(first) {
		t.Fatalf("report after the change: period %d (want %d), passed in period %d (want %d)", r.Period, wantIdx, r.InPeriod.Passed, first)
	}
	// The rest of the minute (t0 is on a minute boundary) brings the
	// period to its new target, not 200 more.
	rest := run(tree, src, ex, "p", at(5*time.Second), 55*time.Second)
	if total := first + rest; total < 190 || total > 200 {
		t.Fatalf("period passed %d, want 200", total)
	}
}

// What a checkpoint holds for a budget the tree no longer has is ignored;
// a budget it does not know starts from zero.
func TestOpenRestoreOtherBudgets(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "new", Target: 10, Period: time.Second}})
	restore := func(budget string) (Report, bool) {
		if budget == "gone" {
			return Report{Budget: "gone", Source: "s", Since: t0, Total: Counters{Offered: 5, Passed: 5}}, true
		}
		return Report{}, false
	}
	src, err := tree.Open("s", at(time.Second), restore)
	if err != nil {
		t.Fatal(err)
	}
	if src.Lane("gone") != nil {
		t.Fatal("a lane for a budget the tree does not have")
	}
	if r := src.Lane("new").report(at(time.Second).UnixNano()); r.Total.Offered != 0 || r.Total.Passed != 0 {
		t.Fatalf("new budget restored %+v", r.Total)
	}
}

// Updates race with deciding lanes (one goroutine per source, refreshing
// between batches), tuning, syncing and reporting: run with -race.
func TestUpdateConcurrent(t *testing.T) {
	a := Budget{Name: "a", Target: 1000, Begin: t0, End: at(time.Hour)}
	b := Budget{Name: "b", Target: 1000, Period: time.Second, Scored: true}
	tree := mustTree(t, []Budget{a})
	ex := &MemoryExchange{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var srcs []*Source
	for i := 0; i < 4; i++ {
		srcs = append(srcs, mustOpen(t, tree, string(rune('p'+i)), t0))
	}
	// loop runs step(k), k = 0, 1, …, in a goroutine until stop closes.
	loop := func(step func(k int, now time.Time)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				step(k, at(time.Duration(k)*time.Millisecond))
			}
		}()
	}
	for _, s := range srcs {
		loop(func(k int, now time.Time) {
			s.Refresh(now, nil)
			for _, name := range []string{"a", "b"} {
				if l := s.Lane(name); l != nil {
					l.Decide(now, float64(k%10))
					l.Reward(now, 1)
				}
			}
		})
	}
	loop(func(_ int, now time.Time) {
		_ = ex.Publish(tree.Reports(now, nil))
		tree.Sync(now, ex)
		tree.Tune(now)
		tree.SetShare(0.5)
		for _, c := range tree.Controllers() {
			_ = c.Snapshot()
		}
	})
	sets := [][]Budget{{a, b}, {a}, {b}, {a, b}}
	for i := 0; i < 40; i++ {
		set := sets[i%len(sets)]
		set[0].Target = float64(1000 + i)
		if _, err := tree.Update(set, at(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		// Real time: the readers in other goroutines run between
		// updates (a race test: the tree's clock is the argument).
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for _, s := range srcs {
		s.Refresh(at(time.Hour), nil)
		if s.Lane("a") == nil || s.Lane("b") == nil || s.Lane("a").c != tree.Controller("a") {
			t.Fatalf("%s: lanes do not follow the final set", s.Name())
		}
	}
	if math.IsNaN(tree.Controller("a").Snapshot().WorkingPassRate) {
		t.Fatal("NaN working rate")
	}
}

func TestSameBudget(t *testing.T) {
	a := Budget{Name: "a", Target: 1, Begin: t0, End: at(time.Hour)}
	b := a
	b.Begin, b.End = t0.In(time.FixedZone("x", 3600)), at(time.Hour).Local()
	if !sameBudget(a, b) {
		t.Fatal("the same instants in other zones differ")
	}
	for _, change := range []func(*Budget){
		func(b *Budget) { b.Target = 2 },
		func(b *Budget) { b.End = at(2 * time.Hour) },
		func(b *Budget) { b.Reserve = time.Second },
		func(b *Budget) { b.Scored = true },
		func(b *Budget) { b.Rewards = true },
		func(b *Budget) { b.Parent = "p" },
	} {
		c := a
		change(&c)
		if sameBudget(a, c) {
			t.Errorf("%+v and %+v are the same", a, c)
		}
	}
}
