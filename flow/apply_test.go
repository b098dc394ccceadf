package flow

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func per(name string, target float64, parent string) Budget {
	return Budget{Name: name, Target: target, Period: time.Minute, Parent: parent}
}

func set(b Budget) Change { return Change{Budget: b} }

func del(name string) Change { return Change{Budget: Budget{Name: name}, Delete: true} }

// Apply changes only the budgets it names, validated against the tree.
func TestApply(t *testing.T) {
	tree := mustTree(t, []Budget{per("acct", 100, ""), per("a", 50, "acct"), per("b", 50, "")})
	ch, err := tree.Apply([]Change{
		set(per("c", 10, "new")), // its parent comes later in the same batch
		set(per("new", 20, "")),
		set(per("b", 60, "acct")),
		set(per("a", 50, "acct")), // unchanged
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ch.Added, ch.Changed, ch.Deleted) != "[c new] [b] []" || tree.Version() != 1 {
		t.Fatalf("changes %+v, version %d", ch, tree.Version())
	}
	var got []string
	for _, b := range tree.Budgets() {
		got = append(got, b.Name+"<"+b.Parent)
	}
	if s := strings.Join(got, " "); s != "acct< a<acct b<acct new< c<new" {
		t.Fatalf("budgets %s", s)
	}
	var each []string
	tree.EachBudget(func(b *Budget) { each = append(each, b.Name+"<"+b.Parent) })
	if !slices.Equal(each, got) {
		t.Fatalf("EachBudget %v, Budgets %v", each, got)
	}
	if _, err := tree.Apply([]Change{del("c"), del("new")}, t0); err != nil {
		t.Fatal(err)
	}
	if tree.Len() != 3 || tree.Version() != 2 {
		t.Fatalf("%d budgets, version %d after deleting two", tree.Len(), tree.Version())
	}
	if ch, err := tree.Apply([]Change{set(per("a", 50, "acct"))}, t0); err != nil || !ch.Empty() || tree.Version() != 2 {
		t.Fatalf("no-op: %+v, %v, version %d", ch, err, tree.Version())
	}
}

// An invalid batch changes nothing and names the budget and field.
func TestApplyInvalid(t *testing.T) {
	delay := Budget{Name: "d", Target: 10, Period: time.Second, Delay: true}
	tree := mustTree(t, []Budget{per("acct", 100, ""), per("a", 50, "acct"), per("b", 50, "a"), delay})
	cases := []struct {
		name          string
		cs            []Change
		budget, field string
	}{
		{"bad field", []Change{set(per("x", -1, ""))}, "x", "target"},
		{"no parent", []Change{set(per("x", 1, "nope"))}, "x", "parent"},
		{"parent deleted in the batch", []Change{set(per("x", 1, "acct")), del("b"), del("a"), del("acct")}, "x", "parent"},
		{"delete a parent", []Change{del("a")}, "a", "name"},
		{"delete unknown", []Change{del("nope")}, "nope", "name"},
		{"twice", []Change{set(per("x", 1, "")), del("x")}, "x", "name"},
		{"cycle with the tree", []Change{set(per("acct", 100, "b"))}, "acct", "parent"},
		{"cycle in the batch", []Change{set(per("x", 1, "y")), set(per("y", 1, "x"))}, "x", "parent"},
		{"delay parent", []Change{set(per("x", 1, "d"))}, "x", "parent"},
		{"parent turned delay", []Change{set(Budget{Name: "a", Target: 10, Period: time.Second, Delay: true})}, "a", "delay"},
		{"delay with children", []Change{set(Budget{Name: "acct", Target: 10, Period: time.Second, Delay: true})}, "acct", "delay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tree.Apply(c.cs, t0)
			var be *BudgetError
			if !errors.As(err, &be) || be.Budget != c.budget || be.Field != c.field || !errors.Is(err, ErrInvalidBudget) {
				t.Fatalf("got %v, want an error on %s.%s", err, c.budget, c.field)
			}
			if tree.Version() != 0 || tree.Len() != 4 {
				t.Fatalf("a refused batch changed the tree: version %d, %d budgets", tree.Version(), tree.Len())
			}
		})
	}
}

// Refresh follows the changes since the source's version; a source behind
// by more than the log holds re-checks its lanes and ends the same.
func TestRefreshFollowsLog(t *testing.T) {
	for _, behind := range []int{3, 2*maxLog + 10} {
		t.Run(fmt.Sprint(behind), func(t *testing.T) {
			tree := mustTree(t, []Budget{per("acct", 100, ""), per("other", 1e9, ""), per("a", 50, "acct"), per("gone", 5, "")})
			src := mustOpen(t, tree, "p0", t0)
			la, lg := src.Lane("a"), src.Lane("gone")
			// move a under other, delete gone, then churn budgets this
			// source has no lane of
			if _, err := tree.Apply([]Change{set(per("a", 1e9, "other")), del("gone")}, t0); err != nil {
				t.Fatal(err)
			}
			for i := 2; i < behind; i++ {
				if _, err := tree.Apply([]Change{set(per("churn", float64(i), ""))}, t0); err != nil {
					t.Fatal(err)
				}
			}
			if !src.Refresh(at(time.Second), nil) || src.Refresh(at(time.Second), nil) {
				t.Fatal("Refresh: want true once, then false")
			}
			if src.Lane("a") != la || la.parent == nil || la.parent.c.Name() != "other" || src.Peek("gone") != nil || !lg.closed {
				t.Fatalf("after Refresh: a under %v, gone open %v", la.parent, src.Peek("gone") != nil)
			}
			if v := la.Decide(at(time.Second), 0); !v.Pass {
				t.Fatalf("a under its new parent: %+v", v)
			}
			if r := src.Peek("acct"); r == nil || r.kids != 0 {
				t.Fatal("acct's lane: still counted as a's parent")
			}
		})
	}
}

// A budget deleted and added again while a source holds a lane of it gets
// a new controller; the source's old lane closes at its Refresh.
func TestReaddedBudget(t *testing.T) {
	tree := mustTree(t, []Budget{per("acct", 100, ""), per("a", 50, "acct")})
	src := mustOpen(t, tree, "p0", t0)
	old := src.Lane("a")
	oldAcct := old.parent
	if _, err := tree.Apply([]Change{del("a"), del("acct")}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Apply([]Change{set(per("acct", 100, "")), set(per("a", 50, "acct"))}, t0); err != nil {
		t.Fatal(err)
	}
	if len(tree.Controllers()) != 0 {
		t.Fatal("the deleted budgets' controllers are still active")
	}
	src.Refresh(at(time.Second), nil)
	if !old.closed || !oldAcct.closed || src.Len() != 0 {
		t.Fatalf("old lanes closed %v %v, %d open", old.closed, oldAcct.closed, src.Len())
	}
	l := src.Lane("a")
	if l == old || l.c != tree.Controller("a") || l.parent.c != tree.Controller("acct") {
		t.Fatal("the new budgets' lanes do not follow their new controllers")
	}
}
