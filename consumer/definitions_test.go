package consumer

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// TestDefQueueStart: the queue takes every budget of the tree once, in the
// tree's order rotated to start at a place the transactional id picks, so
// that workers starting together publish different definitions first.
func TestDefQueueStart(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var bs []flow.Budget
	for i := range 7 {
		bs = append(bs, flow.Budget{Name: fmt.Sprintf("b%d", i), Target: 10, Begin: t0, End: t0.Add(time.Hour)})
	}
	tree, err := flow.NewTree(bs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, b := range tree.Budgets() {
		order = append(order, b.Name)
	}
	starts := map[string]bool{}
	for _, id := range []string{"w-1", "w-2", "w-3", "w-4"} {
		var q defQueue
		q.start(tree, id)
		h := fnv.New32a()
		h.Write([]byte(id))
		off := int(h.Sum32() % uint32(len(order)))
		want := slices.Concat(order[off:], order[:off])
		if !slices.Equal(q.names, want) || !q.exps {
			t.Fatalf("%s: queued %v (experiments %v), want %v", id, q.names, q.exps, want)
		}
		starts[q.names[0]] = true
	}
	if len(starts) < 2 {
		t.Fatalf("four ids all start at %v", starts)
	}
	tree0, err := flow.NewTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	var empty defQueue
	empty.start(tree0, "w")
	if len(empty.names) != 0 {
		t.Fatalf("an empty tree queued %v", empty.names)
	}
}
