package flow

import (
	"testing"
	"time"
)

// A node whose lanes pause (a starved machine, a fetch that stalls) gets
// the events they held back as a backlog when they go on: they are late,
// not gone. Through the pause that node counts its traffic at its usual
// rate, and its peers count the node's at its usual rate too, so that no
// node raises its working fraction to make up passes that the backlog
// brings: the node reads its backlog at the cluster's fraction, the peers
// pass theirs as before, and the cluster does not pass the pause's share
// twice.
func TestPauseOfOneNodeIsNotMadeUpTwice(t *testing.T) {
	b := Budget{Name: "c", Target: 5400, Begin: t0, End: at(60 * time.Second)} // 90/s of 300/s
	c := newCluster(t, b, 3)
	x := &slowExchange{}
	const pauseFrom, pauseTo = 20 * time.Second, 22 * time.Second
	c.straggle = func(i int, now time.Duration) int {
		switch {
		case i != 0 || now < pauseFrom || now > pauseTo:
			return 10
		case now < pauseTo:
			return 0 // node 0's lanes pause
		}
		return 10 + 200 // and read what they held back
	}
	c.run(x, 0, pauseFrom)
	steady := c.trees[1].Controller("c").Snapshot().WorkingPassRate
	before := c.passed[0]
	total := c.run(x, pauseFrom, pauseTo)
	if n := c.passed[0] - before; n != 0 {
		t.Fatalf("node 0 passed %d events while it offered none", n)
	}
	total += c.run(x, pauseTo, pauseTo+100*time.Millisecond)
	own := c.trees[0].Controller("c").Snapshot()
	peer := c.trees[1].Controller("c").Snapshot()
	total += c.run(x, pauseTo+100*time.Millisecond, 26*time.Second)
	ideal := 90 * (26*time.Second - pauseFrom).Seconds()
	t.Logf("working fractions: %.3f before the pause; at the backlog node 0 %.3f (local rate %.0f/s), a peer %.3f; %d passes over 20-26 s (ideal %.0f)",
		steady, own.WorkingPassRate, own.LocalRate, peer.WorkingPassRate, total, ideal)
	if own.LocalRate < 90 {
		t.Errorf("node 0 counted its traffic at %.0f/s through the pause, want its usual 100", own.LocalRate)
	}
	for _, s := range []struct {
		who string
		p   float64
	}{{"node 0", own.WorkingPassRate}, {"a peer", peer.WorkingPassRate}} {
		if s.p > 1.25*steady {
			t.Errorf("%s's working fraction %.3f when the backlog came, want about the %.3f of before the pause", s.who, s.p, steady)
		}
	}
	if float64(total) > 1.05*ideal {
		t.Errorf("%d passes over 20-26 s, over the ideal %.0f by more than 5%%", total, ideal)
	}
}
