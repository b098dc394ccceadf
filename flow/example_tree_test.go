package flow_test

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
)

// A node paces a campaign of 3,600 passes over an hour, with a child
// budget of 600 for one placement under it, while it is offered ten events
// a second of each. Time is an argument: the example runs the first ten
// minutes in virtual time, tuning every 100 ms as a worker does.
func ExampleTree() {
	begin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, err := flow.NewTree([]flow.Budget{
		{Name: "campaign", Target: 3600, Begin: begin, End: begin.Add(time.Hour)},
		{Name: "placement-a", Target: 600, Begin: begin, End: begin.Add(time.Hour), Parent: "campaign"},
	})
	if err != nil {
		panic(err)
	}
	// One source per partition this node owns; its lanes are the budgets'
	// doors on the hot path.
	src, err := tree.Open("events/0", begin, nil)
	if err != nil {
		panic(err)
	}
	passed := map[string]int{}
	now := begin
	for step := 0; now.Before(begin.Add(10 * time.Minute)); step++ {
		now = now.Add(50 * time.Millisecond) // 10 events/s per budget
		if step%2 == 0 {
			tree.Tune(now)
		}
		if src.Get([]byte("campaign"), now).Decide(now, 0).Pass {
			passed["campaign"]++
		}
		// A pass of the placement is a pass of the campaign too.
		if src.Get([]byte("placement-a"), now).Decide(now, 0).Pass {
			passed["placement-a"]++
			passed["campaign"]++
		}
	}
	// On course: a sixth of the hour spent, a sixth of each target passed.
	for _, b := range []string{"campaign", "placement-a"} {
		target := tree.Controller(b).Budget().Target
		fmt.Printf("%s: %d passes, %.0f%% of a sixth of its target\n", b, passed[b], 100*float64(passed[b])/(target/6))
	}
	// Output:
	// campaign: 600 passes, 100% of a sixth of its target
	// placement-a: 100 passes, 100% of a sixth of its target
}
