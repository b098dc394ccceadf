package flow

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// refQueue is dueQueue through container/heap, the order dueQueue keeps.
type refQueue []dueEntry

func (q refQueue) Len() int           { return len(q) }
func (q refQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q refQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *refQueue) Push(x any)        { *q = append(*q, x.(dueEntry)) }
func (q *refQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// TestDueQueueOrder: pushes and pops mixed, with many entries due at the
// same instant, come out as container/heap gives them (the rounds visit
// controllers in that order), earliest first, and a popped slot is
// cleared.
func TestDueQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctrls := make([]*Controller, 64)
	for i := range ctrls {
		ctrls[i] = &Controller{name: string(rune('a' + i%26))}
	}
	var q dueQueue
	var ref refQueue
	last := int64(-1)
	for step := range 20000 {
		if len(q) != len(ref) {
			t.Fatalf("step %d: %d entries, container/heap has %d", step, len(q), len(ref))
		}
		if len(q) == 0 || rng.IntN(3) > 0 {
			e := dueEntry{at: int64(rng.IntN(50)), c: ctrls[rng.IntN(len(ctrls))]}
			q.push(e)
			heap.Push(&ref, e)
			last = -1
			continue
		}
		got, want := q.pop(), heap.Pop(&ref).(dueEntry)
		if got != want {
			t.Fatalf("step %d: popped %v, container/heap pops %v", step, got, want)
		}
		if got.at < last {
			t.Fatalf("step %d: popped %d after %d", step, got.at, last)
		}
		last = got.at
		if cap(q) > len(q) && q[:len(q)+1][len(q)] != (dueEntry{}) {
			t.Fatalf("step %d: the popped slot still holds %v", step, q[:len(q)+1][len(q)])
		}
	}
}
