package consumer

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// TestApplyBudgets changes a running worker's budgets in one batch (add c,
// change a, delete b): events of c are decided, those of b dead-lettered,
// and b leaves the ledgers. A batch that breaks a rule (deleting a parent
// still in use) changes nothing.
func TestApplyBudgets(t *testing.T) {
	env := newTestEnv(t)
	w := env.startWorker(t, "w", SyncInterval(100*time.Millisecond))
	waitReady(t, w.w)
	recs, _ := eventRecords(0, 600)
	env.produce(recs)
	env.waitCommitted("events")
	testwait.Eventually(t, "b in the ledgers", func() bool {
		for _, st := range env.ledgers() {
			if _, ok := st.Report("b"); ok {
				return true
			}
		}
		return false
	})

	now := time.Now()
	bad := []flow.Change{
		{Budget: flow.Budget{Name: "p", Target: 10, Period: time.Hour}},
		{Budget: flow.Budget{Name: "kid", Target: 5, Period: time.Hour, Parent: "p"}},
		{Budget: flow.Budget{Name: "a"}, Delete: true},
		{Budget: flow.Budget{Name: "p"}, Delete: true},
	}
	if _, err := w.w.ApplyBudgets(bad); err == nil {
		t.Fatal("a batch deleting a parent in use was applied")
	}
	if _, ok := w.w.tree.Budget("a"); !ok {
		t.Fatal("a refused batch changed the budgets")
	}
	ch, err := w.w.ApplyBudgets([]flow.Change{
		{Budget: flow.Budget{Name: "c", Target: 1e6, Period: time.Hour}},
		{Budget: flow.Budget{Name: "a", Target: 7777, Begin: now.Add(-time.Minute), End: now.Add(time.Hour)}},
		{Budget: flow.Budget{Name: "b"}, Delete: true},
	})
	if err != nil || len(ch.Added) != 1 || len(ch.Changed) != 1 || len(ch.Deleted) != 1 {
		t.Fatalf("ApplyBudgets: %+v, %v", ch, err)
	}
	var more []*kgo.Record
	for i := range 240 {
		budget := []string{"b", "c"}[i%2]
		more = append(more, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("u%d", i)),
			Value: []byte(fmt.Sprintf(`{"id":%d,"budget":%q,"user":"u%d","score":1}`, 1000+i, budget, i))})
	}
	env.produce(more)
	env.waitCommitted("events")
	got := env.readAll("dlq")
	dead := 0
	for _, r := range got["dlq"] {
		if id := recordID(r); id >= 1000 {
			dead++
		}
	}
	if dead != 120 {
		t.Fatalf("%d dead letters of the 240 events after the change, want the 120 of b", dead)
	}
	testwait.Eventually(t, "b to leave the ledgers and c to enter them", func() bool {
		var b, c bool
		for _, st := range env.ledgers() {
			_, hasB := st.Report("b")
			_, hasC := st.Report("c")
			b, c = b || hasB, c || hasC
		}
		return !b && c
	})
	testwait.Eventually(t, "the definitions in the stats view", func() bool {
		a, _ := w.w.tree.Budget("a")
		return a.Target == 7777 && w.w.view.ShowsBudget(a) && !w.w.view.HasBudgetDef("b") && w.w.view.HasBudgetDef("c")
	})
}
