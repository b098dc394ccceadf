package flow

import (
	"testing"
	"time"
)

// Changed lists what changed since it last listed it; a listed lane is
// listed again after Unpublished, and not after Published.
func TestChanged(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "a", Target: 1e6, Period: time.Hour},
		{Name: "b", Target: 1e6, Period: time.Hour},
	})
	src := mustOpen(t, tree, "p0", t0)
	restored := mustOpen(t, tree, "p1", t0)
	_ = restored.Lane("a") // opened, never used: nothing to publish
	names := func(rs []Report) (s string) {
		for _, r := range rs {
			s += r.Budget
		}
		return s
	}
	src.Lane("a").Decide(t0, 0)
	src.Lane("b").Reward(t0, 1)
	steps := []struct {
		do   func()
		want string
	}{
		{func() {}, "ab"},
		{func() {}, ""},
		{func() { src.Lane("b").Decide(at(time.Second), 0) }, "b"},
		{src.Unpublished, "ab"},
		{src.Published, ""},
		{src.Unpublished, ""},
	}
	for i, s := range steps {
		s.do()
		if got := names(src.Changed(at(2*time.Second), nil)); got != s.want {
			t.Fatalf("step %d: changed %q, want %q", i, got, s.want)
		}
	}
	if rs := restored.Changed(at(2*time.Second), nil); len(rs) != 0 {
		t.Fatalf("an unused lane listed: %+v", rs)
	}
}

// A released lane opens again from its published counters and continues:
// cumulative counters never go backwards. Lanes not yet published, still
// in use, or parents of open lanes stay.
func TestReleaseReopen(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "acct", Target: 1e6, Period: time.Hour},
		{Name: "c", Target: 1e6, Period: time.Hour, Parent: "acct"},
	})
	ledger := map[string]Report{} // what the consumer committed
	restore := func(b string) (Report, bool) { r, ok := ledger[b]; return r, ok }
	src, err := tree.Open("p0", t0, restore)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(reps []Report) {
		for _, r := range reps {
			ledger[r.Budget] = r
		}
		src.Published()
	}
	offer(src.Lane("c"), t0, time.Second, 100, 0)
	if n := src.Release(at(time.Minute), 10*time.Second); n != 0 {
		t.Fatalf("released %d lanes with unpublished counters", n)
	}
	listed := src.Changed(at(time.Minute), nil)
	if n := src.Release(at(time.Minute), 10*time.Second); n != 0 {
		t.Fatalf("released %d lanes listed but not published", n)
	}
	commit(listed)
	if n := src.Release(at(5*time.Second), 10*time.Second); n != 0 {
		t.Fatalf("released %d lanes used 4 s ago", n)
	}
	before := src.Lane("c").report(at(time.Minute).UnixNano())
	if n := src.Release(at(time.Minute), 10*time.Second); n != 2 || src.Len() != 0 {
		t.Fatalf("released %d, %d open; want both (the parent once its child went)", n, src.Len())
	}
	l := src.Get([]byte("c"), at(2*time.Minute))
	after := l.report(at(2 * time.Minute).UnixNano())
	if after.Total != before.Total || !after.Since.Equal(before.Since) || after.InPeriod != before.InPeriod {
		t.Fatalf("reopened at %+v, released at %+v", after, before)
	}
	offer(l, at(2*time.Minute), time.Second, 10, 0)
	commit(src.Changed(at(3*time.Minute), nil))
	if got := ledger["c"].Total.Offered; got != 110 {
		t.Fatalf("offered %d after reopening, want 110", got)
	}
	if got := ledger["acct"].Total.Offered; got != 110 {
		t.Fatalf("parent offered %d after reopening, want 110", got)
	}
}

// A controller without lanes is kept DropAfter, then dropped at the next
// visit round; a lane that opens meanwhile finds it as it was.
func TestControllerDrop(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "c", Target: 1e6, Period: time.Hour}}, DropAfter(10*time.Second))
	src := mustOpen(t, tree, "p0", t0)
	c := src.Lane("c").c
	src.Release(at(time.Second), 0)
	tree.Tune(at(5 * time.Second))
	if tree.Controller("c") != c {
		t.Fatal("dropped before DropAfter")
	}
	if src.Lane("c").c != c {
		t.Fatal("a lane opened within DropAfter got another controller")
	}
	src.Release(at(6*time.Second), 0)
	tree.Tune(at(15 * time.Second))
	if tree.Controller("c") != c {
		t.Fatal("dropped before DropAfter from the last close")
	}
	tree.Tune(at(16 * time.Second))
	if tree.Controller("c") != nil || len(tree.Controllers()) != 0 {
		t.Fatal("not dropped DropAfter after its last lane closed")
	}
	if l := src.Lane("c"); l == nil || l.c == c || tree.Controller("c") != l.c {
		t.Fatal("no new controller for a lane after the drop")
	}
}
