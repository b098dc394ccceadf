package flow

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func delayBudget(target float64, period time.Duration) Budget {
	return Budget{Name: "d", Target: target, Period: period, Delay: true}
}

func TestDelayBudgetValidation(t *testing.T) {
	cases := []struct {
		name  string
		bs    []Budget
		field string
	}{
		{"no period", []Budget{{Name: "d", Target: 1, Begin: t0, End: at(time.Hour), Delay: true}}, "period"},
		{"scored", []Budget{{Name: "d", Target: 1, Period: time.Second, Scored: true, Delay: true}}, "scored"},
		{"rewards", []Budget{{Name: "d", Target: 1, Period: time.Second, Rewards: true, Delay: true}}, "rewards"},
		{"nested", []Budget{{Name: "a", Target: 9, Period: time.Second}, {Name: "d", Target: 1, Period: time.Second, Parent: "a", Delay: true}}, "parent"},
		{"as parent", []Budget{delayBudget(9, time.Second), {Name: "c", Target: 1, Period: time.Second, Parent: "d"}}, "parent"},
	}
	for _, c := range cases {
		_, err := NewTree(c.bs)
		var be *BudgetError
		if !errors.As(err, &be) || !errors.Is(err, ErrInvalidBudget) || be.Field != c.field {
			t.Errorf("%s: got %v, want a BudgetError on %s", c.name, err, c.field)
		}
	}
}

// One node holding every source: Target passes per period, then delays
// until the period ends; the next period refills.
func TestDelaySteps(t *testing.T) {
	tree := mustTree(t, []Budget{delayBudget(3, time.Second)})
	l := mustOpen(t, tree, "p0", t0).Lane("d")
	steps := []struct {
		at    time.Duration
		pass  bool
		retry time.Duration
	}{
		{0, true, 0},
		{100 * time.Millisecond, true, 0},
		{200 * time.Millisecond, true, 0},
		{300 * time.Millisecond, false, time.Second},
		{999 * time.Millisecond, false, time.Second},
		{time.Second, true, 0},
		{1500 * time.Millisecond, true, 0},
		{1600 * time.Millisecond, true, 0},
		{1700 * time.Millisecond, false, 2 * time.Second},
		{5 * time.Second, true, 0}, // idle periods carry nothing over
		{5 * time.Second, true, 0},
		{5 * time.Second, true, 0},
		{5 * time.Second, false, 6 * time.Second},
	}
	for i, s := range steps {
		v := l.Decide(at(s.at), 0)
		if v.Pass != s.pass {
			t.Fatalf("step %d at %v: pass %v, want %v", i, s.at, v.Pass, s.pass)
		}
		if !v.Pass {
			if v.Reason != ReasonDelayed || v.By != "d" {
				t.Fatalf("step %d: verdict %+v, want delayed by d", i, v)
			}
			if got := l.RetryAt(); !got.Equal(at(s.retry)) {
				t.Fatalf("step %d: retry at %v, want %v", i, got.Sub(t0), s.retry)
			}
		}
	}
	if r := l.report(at(5 * time.Second).UnixNano()); r.Total.Offered != 9 || r.Total.Passed != 9 {
		t.Errorf("counters %+v: a delayed event is not offered, want 9 offered and 9 passed", r.Total)
	}
}

func TestDelayBeforeBegin(t *testing.T) {
	b := delayBudget(5, time.Minute)
	b.Begin = at(time.Hour)
	tree := mustTree(t, []Budget{b})
	l := mustOpen(t, tree, "p0", t0).Lane("d")
	if v := l.Decide(at(time.Minute), 0); v.Pass || v.Reason != ReasonDelayed {
		t.Fatalf("before begin: %+v, want delayed", v)
	}
	if !l.RetryAt().Equal(at(time.Hour)) {
		t.Fatalf("retry at %v, want begin", l.RetryAt().Sub(t0))
	}
	if !l.Decide(at(time.Hour), 0).Pass {
		t.Fatal("at begin: delayed, want a pass")
	}
}

// node is one simulated worker: a tree, its lanes, and a backlog per lane.
type delayNode struct {
	tree  *Tree
	lanes []*Lane
	wait  []time.Time // per lane: paused until
}

func newDelayNode(t *testing.T, b Budget, share float64, sources []string, now time.Time) *delayNode {
	n := &delayNode{tree: mustTree(t, []Budget{b})}
	n.tree.SetShare(share)
	for _, s := range sources {
		n.lanes = append(n.lanes, mustOpen(t, n.tree, s, now).Lane(b.Name))
		n.wait = append(n.wait, time.Time{})
	}
	return n
}

// step offers up to burst backlogged events on each lane not paused, as a
// partition goroutine would: it stops at the first delayed event and pauses
// until RetryAt. It returns the passes.
func (n *delayNode) step(t *testing.T, now time.Time, burst int) int {
	passed := 0
	for i, l := range n.lanes {
		if now.Before(n.wait[i]) {
			continue
		}
		for k := 0; k < burst; k++ {
			v := l.Decide(now, 0)
			if v.Pass {
				passed++
				continue
			}
			if v.Reason != ReasonDelayed {
				t.Fatalf("a delay budget answered %v", v.Reason)
			}
			n.wait[i] = l.RetryAt()
			break
		}
	}
	return passed
}

// Three nodes of four sources each, every source backlogged, exchanging
// reports every second: each period passes exactly the sum of the shares'
// allowances (999 of 1000), never more, for a minute.
func TestDelayThreeNodesSteady(t *testing.T) {
	const target = 1000
	b := delayBudget(target, time.Second)
	ex := &MemoryExchange{}
	var nodes []*delayNode
	for i := 0; i < 3; i++ {
		var srcs []string
		for j := 0; j < 4; j++ {
			srcs = append(srcs, fmt.Sprintf("p%d", 4*i+j))
		}
		nodes = append(nodes, newDelayNode(t, b, 1.0/3, srcs, t0))
	}
	total := 0
	for sec := 0; sec < 60; sec++ {
		inPeriod := 0
		for ms := 0; ms < 1000; ms += 10 {
			now := at(time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond)
			for _, n := range nodes {
				inPeriod += n.step(t, now, 50)
			}
			if ms%100 == 0 {
				for _, n := range nodes {
					n.tree.Tune(now)
				}
			}
			if ms == 500 {
				for _, n := range nodes {
					ex.Publish(n.tree.Reports(now, nil))
				}
				for _, n := range nodes {
					n.tree.Sync(now, ex)
				}
			}
		}
		if inPeriod != 999 {
			t.Fatalf("period %d passed %d, want 999 (3 × floor(1000/3))", sec, inPeriod)
		}
		total += inPeriod
	}
	if rate := float64(total) / 60; rate < 0.98*target || rate > target {
		t.Errorf("rate %.1f per period, want within 2%% under %d", rate, target)
	}
}

// A node that starts in the middle of a period takes its share of what the
// cluster has left, not of the whole target.
func TestDelayStartMidPeriod(t *testing.T) {
	b := delayBudget(900, 10*time.Second)
	ex := &MemoryExchange{}
	a := newDelayNode(t, b, 1.0/3, []string{"p0"}, t0)
	c := newDelayNode(t, b, 1.0/3, []string{"p1"}, t0)
	if got := a.step(t, at(time.Second), 1000) + c.step(t, at(time.Second), 1000); got != 600 {
		t.Fatalf("two nodes passed %d, want 2 × 300", got)
	}
	// Reports made at the instant the late node joins: nothing to
	// extrapolate (TestDelayStartExtrapolates covers that).
	ex.Publish(a.tree.Reports(at(3*time.Second), nil))
	ex.Publish(c.tree.Reports(at(3*time.Second), nil))
	late := newDelayNode(t, b, 1.0/3, []string{"p2"}, at(3*time.Second))
	late.tree.Sync(at(3*time.Second), ex)
	if got := late.step(t, at(3*time.Second), 1000); got != 100 {
		t.Fatalf("the late node passed %d, want floor(1/3 × (900 − 600)) = 100", got)
	}
	if got := late.step(t, at(10*time.Second), 1000); got != 300 {
		t.Fatalf("the late node's next period: %d passes, want 300", got)
	}
}

// Passes peers made since their last report count at their last pass rate,
// so a node joining mid-period errs low.
func TestDelayStartExtrapolates(t *testing.T) {
	b := delayBudget(900, 10*time.Second)
	ex := &MemoryExchange{}
	a := newDelayNode(t, b, 0.5, []string{"p0"}, t0)
	if got := a.step(t, at(time.Second), 200); got != 200 {
		t.Fatalf("passed %d, want 200", got)
	}
	ex.Publish(a.tree.Reports(at(2*time.Second), nil)) // 200 over 2 s: 100/s
	late := newDelayNode(t, b, 0.5, []string{"p1"}, at(3*time.Second))
	late.tree.Sync(at(3*time.Second), ex)
	if got := late.step(t, at(3*time.Second), 1000); got != 300 {
		t.Fatalf("the late node passed %d, want floor(0.5 × (900 − 200 − 100/s × 1 s)) = 300", got)
	}
}

// A share that changes in the middle of a period (a rebalance) keeps what
// was used and takes the new share of what the cluster has left.
func TestDelayShareChangeMidPeriod(t *testing.T) {
	b := delayBudget(1000, 10*time.Second)
	ex := &MemoryExchange{}
	a := newDelayNode(t, b, 0.5, []string{"p0"}, t0)
	c := newDelayNode(t, b, 0.5, []string{"p1"}, t0)
	if got := a.step(t, at(time.Second), 200) + c.step(t, at(time.Second), 400); got != 600 {
		t.Fatalf("passed %d, want 600", got)
	}
	ex.Publish(a.tree.Reports(at(2*time.Second), nil))
	ex.Publish(c.tree.Reports(at(2*time.Second), nil))
	a.tree.Sync(at(2*time.Second), ex)
	a.tree.SetShare(0.25)
	a.tree.Tune(at(2 * time.Second))
	if _, allow, used := a.tree.Controller("d").Allowance(); used != 200 || allow != 300 {
		t.Fatalf("allowance %d (used %d), want 200 + floor(0.25 × 400) = 300", allow, used)
	}
	// c takes over: its share grows, but only from the next period.
	c.tree.SetShare(0.75)
	c.tree.Tune(at(2200 * time.Millisecond))
	if _, allow, used := c.tree.Controller("d").Allowance(); used != 400 || allow != 500 {
		t.Fatalf("allowance %d (used %d), want 500 kept until the period ends", allow, used)
	}
	if got := c.step(t, at(10*time.Second), 1000); got != 750 {
		t.Fatalf("next period: %d passes, want 0.75 × 1000", got)
	}
}

// Lanes of one node deciding in parallel never pass more than the node's
// allowance together.
func TestDelayConcurrentLanes(t *testing.T) {
	tree := mustTree(t, []Budget{delayBudget(5000, time.Minute)})
	var wg sync.WaitGroup
	passed := make([]int, 8)
	for i := range passed {
		l := mustOpen(t, tree, fmt.Sprintf("p%d", i), t0).Lane("d")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 2000; k++ {
				if l.Decide(at(time.Second), 0).Pass {
					passed[i]++
				}
			}
		}()
	}
	wg.Wait()
	sum := 0
	for _, n := range passed {
		sum += n
	}
	if sum != 5000 {
		t.Fatalf("lanes passed %d together, want exactly the allowance 5000", sum)
	}
}
