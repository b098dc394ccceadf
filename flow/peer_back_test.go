package flow

import (
	"testing"
	"time"
)

// TestPeerCountersGoingBack: a peer's cumulative counters go back when
// the report read before counted work that was then rolled back (a lane
// closed after an aborted transaction stands for its source until the
// committed counters arrive). Its rates must not be taken from the
// negative difference (unsigned: ~1.8e19 events): the node would
// estimate an absurd cluster rate and pass nothing.
func TestPeerCountersGoingBack(t *testing.T) {
	tree := mustTree(t, []Budget{{Name: "b", Target: 1e6, Begin: t0, End: t0.Add(time.Hour)}})
	l := mustOpen(t, tree, "own", t0).Lane("b")
	ex := &MemoryExchange{}
	peer := func(at time.Duration, n uint64) {
		if err := ex.Publish([]Report{{Budget: "b", Source: "peer", At: t0.Add(at), Since: t0,
			Total: Counters{Offered: n, Passed: n}}}); err != nil {
			t.Fatal(err)
		}
		tree.Sync(t0.Add(at), ex)
	}
	passes := func(from time.Duration) int {
		n := 0
		for i := range 10 {
			at := from + time.Duration(i)*100*time.Millisecond
			tree.Tune(t0.Add(at))
			n += offer(l, t0.Add(at), 100*time.Millisecond, 5, 0)
		}
		return n
	}
	passes(0)
	peer(time.Second, 50)
	passes(time.Second)
	peer(2*time.Second, 100)
	peer(3*time.Second, 90) // back: the 10 of the previous report were rolled back
	if p := tree.Controller("b").srcs["peer"].peer; p.offRate > 1e6 || p.passRate > 1e6 {
		t.Fatalf("peer rates %v offered/s, %v passed/s after its counters went back", p.offRate, p.passRate)
	}
	if n := passes(3 * time.Second); n < 45 {
		t.Fatalf("%d of 50 events passed after a peer's counters went back, far below the target's pace", n)
	}
}
