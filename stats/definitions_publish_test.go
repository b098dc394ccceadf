package stats

import (
	"errors"
	"testing"

	"github.com/throttler/throttler/flow"
)

// TestDefinitionRecords publishes definitions through a View: only what
// the View does not show identically is returned, whoever published it;
// the same with a View that keeps digests of the budgets' definitions.
func TestDefinitionRecords(t *testing.T) {
	t.Run("whole", func(t *testing.T) { testDefinitionRecords(t, false) })
	t.Run("digests", func(t *testing.T) { testDefinitionRecords(t, true) })
}

func testDefinitionRecords(t *testing.T, digests bool) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 3))
	var opts []ViewOpt
	if digests {
		opts = append(opts, DigestDefinitions())
	}
	v := newView(t, conn, "stats", opts...)
	pub, _ := NewPublisher("stats")
	cl := newClient(t, conn)
	budgets := []flow.Budget{
		{Name: "all", Target: 1000, Begin: t1, End: t0},
		{Name: "campaign/x", Parent: "all", Target: 10, Period: 60e9, Rewards: true},
	}
	exps := []ExperimentDef{{Layer: "home", Experiment: "hero", Variants: []VariantDef{{Name: "a", Weight: 1, Topic: "out-a"}, {Name: "b", Weight: 1, Topic: "out-b", Limit: "campaign/x", Fallback: "output"}}}}
	publish := func(origin string, want int) {
		t.Helper()
		recs, err := pub.DefinitionRecords(v, budgets, exps, origin, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != want {
			t.Fatalf("%s: %d records, want %d", origin, len(recs), want)
		}
		if len(recs) > 0 {
			produceSync(t, cl, recs...)
		}
		waitFor(t, "the definitions", func() bool {
			for _, b := range budgets {
				if !v.ShowsBudget(b) || !v.HasBudgetDef(b.Name) {
					return false
				}
				if d, ok := v.BudgetDef(b.Name); ok == digests || (ok && d.Budget.Target != b.Target) {
					return false
				}
			}
			d, ok := v.ExperimentDef("home", "hero")
			return ok && d.Variants[0].Weight == exps[0].Variants[0].Weight
		})
	}
	publish("worker-1", 3)
	publish("worker-2", 0) // same content, another worker
	budgets[1].Target = 20
	publish("worker-2", 1)
	exps[0].Variants[0].Weight = 3
	publish("worker-1", 1)
	if d, _ := v.BudgetDef("campaign/x"); !digests && (d.Origin != "worker-2" || !d.At.Equal(t0)) {
		t.Fatalf("published definition %+v", d)
	}
	// A deleted definition is shown no more.
	key, err := BudgetKey("campaign/x")
	if err != nil {
		t.Fatal(err)
	}
	produceSync(t, cl, pub.TombstoneKey(key))
	waitFor(t, "the tombstone", func() bool { return !v.HasBudgetDef("campaign/x") })
	if v.ShowsBudget(budgets[1]) || !v.ShowsBudget(budgets[0]) {
		t.Fatal("the deleted definition is still shown, or the other is not")
	}
	if recs, err := pub.DefinitionRecords(v, budgets, nil, "worker-1", t0); err != nil || len(recs) != 1 {
		t.Fatalf("after the deletion: %d records (%v), want 1", len(recs), err)
	}
	if _, err := pub.DefinitionRecords(v, []flow.Budget{{}}, nil, "w", t0); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("empty budget name: %v", err)
	}
}
