package flow

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// chainOf returns n period budgets b0 <- b1 <- ... (b0 the root).
func chainOf(n int, prefix string) []Budget {
	var out []Budget
	for i := range n {
		b := Budget{Name: fmt.Sprintf("%s%d", prefix, i), Target: 10, Period: time.Minute}
		if i > 0 {
			b.Parent = fmt.Sprintf("%s%d", prefix, i-1)
		}
		out = append(out, b)
	}
	return out
}

// TestTargetLimits checks the target's range for every way a budget
// arrives: NewTree, Apply and CheckBudget.
func TestTargetLimits(t *testing.T) {
	for _, target := range []float64{MinTarget, 1, MaxTarget} {
		b := Budget{Name: "ok", Target: target, Period: time.Minute}
		if err := CheckBudget(b); err != nil {
			t.Fatalf("target %v: %v", target, err)
		}
	}
	for _, target := range []float64{0, -1, 5e-324, MinTarget / 2, 1.7e308, MaxTarget * 2, math.Inf(1), math.NaN()} {
		b := Budget{Name: "bad", Target: target, Period: time.Minute}
		if err := CheckBudget(b); !errors.Is(err, ErrInvalidBudget) {
			t.Fatalf("target %v: CheckBudget %v", target, err)
		}
		if _, err := NewTree([]Budget{b}); !errors.Is(err, ErrInvalidBudget) {
			t.Fatalf("target %v: NewTree %v", target, err)
		}
		tr, err := NewTree(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Apply([]Change{{Budget: b}}, t0); !errors.Is(err, ErrInvalidBudget) {
			t.Fatalf("target %v: Apply %v", target, err)
		}
	}
}

// TestDepthLimit checks that no budget nests deeper than MaxDepth: in a
// new tree, a budget added under the deepest, and a subtree moved under
// another chain.
func TestDepthLimit(t *testing.T) {
	if _, err := NewTree(chainOf(MaxDepth+1, "b")); !errors.Is(err, ErrInvalidBudget) {
		t.Fatalf("a chain of %d: %v", MaxDepth+1, err)
	}
	tr, err := NewTree(append(chainOf(MaxDepth, "a"), chainOf(4, "c")...))
	if err != nil {
		t.Fatalf("a chain of %d: %v", MaxDepth, err)
	}
	leaf := Budget{Name: "leaf", Target: 1, Period: time.Minute, Parent: fmt.Sprintf("a%d", MaxDepth-1)}
	if _, err := tr.Apply([]Change{{Budget: leaf}}, t0); !errors.Is(err, ErrInvalidBudget) {
		t.Fatalf("a leaf under depth %d: %v", MaxDepth, err)
	}
	// c0 has a chain of 4 under it: moving it under a12 makes c3 17 deep.
	moved := Budget{Name: "c0", Target: 10, Period: time.Minute, Parent: "a12"}
	if _, err := tr.Apply([]Change{{Budget: moved}}, t0); !errors.Is(err, ErrInvalidBudget) {
		t.Fatalf("a subtree of 4 moved under depth 13: %v", err)
	}
	moved.Parent = "a11"
	if _, err := tr.Apply([]Change{{Budget: moved}}, t0); err != nil {
		t.Fatalf("a subtree of 4 moved under depth 12: %v", err)
	}
}
