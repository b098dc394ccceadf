package flow

import (
	"testing"
	"time"
)

// copyExchange returns a copy of what m shows now: the view of a node
// whose reader stood still from then on.
func copyExchange(m *MemoryExchange) *MemoryExchange {
	var c MemoryExchange
	for _, bs := range m.latest {
		for _, r := range bs {
			_ = c.Publish([]Report{r})
		}
	}
	return &c
}

// A node frozen for 25 s (SIGSTOP, a VM paused) wakes up 2 s before its
// budget's window ends, with 25 s of its traffic as a backlog, while its
// reader of the exchange still shows what it showed when the freeze
// began. Its two peers went on and kept the budget on its course. The
// woken node's picture misses everything the peer passed meanwhile; taken
// for an outage of the exchange, with the peer extrapolated at its rates
// of before, it reads as a lag of about a thousand passes, which the
// backlog would make up. It passes nothing of the paced budget until a
// report its peer made after the freeze comes (nor before its tuner ran
// again, with what it was allowed before the freeze), and the budget ends
// on its target; a budget far from its target beside it passes the
// backlog.
func TestFrozenNodeWaitsForNewsOfItsPeers(t *testing.T) {
	// The backlog read at once: its first batch is decided before the
	// tuner runs, on the allowance of before the freeze. Over five steps:
	// on the picture of before the freeze.
	t.Run("at once", func(t *testing.T) { frozenNode(t, 2500) })
	t.Run("over five steps", func(t *testing.T) { frozenNode(t, 500) })
}

func frozenNode(t *testing.T, batch int) {
	end := 30 * time.Second
	paced := Budget{Name: "c", Target: 3000, Begin: t0, End: at(end)} // 100/s of 300/s
	far := Budget{Name: "far", Target: 1e12, Begin: t0, End: at(end)}
	x := &slowExchange{}
	var trees [3]*Tree
	var lanes [3][2]*Lane // node, budget (paced, far)
	for i := range trees {
		trees[i] = mustTree(t, []Budget{paced, far}, PriorShare(1.0/3))
		src := mustOpen(t, trees[i], string(rune('a'+i)), t0)
		lanes[i] = [2]*Lane{src.Lane("c"), src.Lane("far")}
	}
	const freeze, wake, caughtUp = 3 * time.Second, 28 * time.Second, 28600 * time.Millisecond
	var stuck *MemoryExchange // node 0's reader during the freeze, and just after
	var passed [3][2]int
	var backlog int // node 0's events held back by the freeze
	for now := time.Duration(0); now < end; now += 100 * time.Millisecond {
		x.advance(at(now))
		if now == freeze {
			stuck = copyExchange(&x.shown)
		}
		for i, tr := range trees {
			events := 10
			if i == 0 && now >= freeze && now < wake {
				backlog += events
				continue // frozen: no tune, no publication, no decision
			}
			if i == 0 && now >= wake && backlog > 0 {
				k := min(backlog, batch)
				backlog -= k
				events += k
			}
			ex := Exchange(&x.shown)
			if i == 0 && now >= wake && now < caughtUp {
				ex = stuck
			}
			decide := func() {
				for b := range 2 {
					passed[i][b] += offer(lanes[i][b], at(now), 100*time.Millisecond, events, 0)
				}
			}
			if i == 0 && now == wake {
				// The partition goroutines run before the tuner's.
				decide()
				decide = func() {}
			}
			if (now/(100*time.Millisecond))%10 == time.Duration(i) {
				x.publish(at(now), tr.Reports(at(now), nil))
				tr.Sync(at(now), ex)
			} else {
				tr.Tune(at(now))
			}
			decide()
		}
	}
	total := passed[0][0] + passed[1][0] + passed[2][0]
	t.Logf("paced budget: %d passes for a target of 3000 (nodes %d, %d, %d); far budget: node 0 passed %d of its events",
		total, passed[0][0], passed[1][0], passed[2][0], passed[0][1])
	if total > 3015 {
		t.Errorf("the paced budget passed %d, over its target of 3000 by more than 0.5%%", total)
	}
	if total < 2910 {
		t.Errorf("the paced budget passed %d, under its target of 3000 by more than 3%%", total)
	}
	if want := 10 * int(end/(100*time.Millisecond)); passed[0][1] != want {
		t.Errorf("the far budget passed %d of node 0's %d events: it refused some", passed[0][1], want)
	}
}

// A node that lost a source (its group session expired while it was
// frozen) takes the exchange's latest report of it for the source: what
// the next owner passed meanwhile counts at once. The lane's own counts,
// which Close leaves, miss it until a report newer than the close comes.
func TestLostSourceTakesTheExchangesReport(t *testing.T) {
	b := Budget{Name: "c", Target: 1e6, Begin: t0, End: at(time.Hour)}
	ex := &MemoryExchange{}
	old := mustTree(t, []Budget{b}, Peers(ex), PriorShare(0.5))
	ctl := mustTree(t, []Budget{b}, Peers(ex), PriorShare(0.5)) // as old, closing instead
	next := mustTree(t, []Budget{b}, Peers(ex), PriorShare(0.5))
	srcOld, srcCtl := mustOpen(t, old, "p/0", t0), mustOpen(t, ctl, "p/0", t0)
	for s := time.Duration(0); s < 3*time.Second; s += 100 * time.Millisecond {
		for _, tr := range []*Tree{old, ctl} {
			tr.Tune(at(s))
		}
		offer(srcOld.Lane("c"), at(s), 100*time.Millisecond, 10, 0)
		offer(srcCtl.Lane("c"), at(s), 100*time.Millisecond, 10, 0)
	}
	_ = ex.Publish(old.Reports(at(3*time.Second), nil))
	before, _ := ex.Report("c", "p/0")
	// The next owner takes the source over from the committed counters.
	srcNext, err := next.Open("p/0", at(9*time.Second), func(string) (Report, bool) { return ex.Report("c", "p/0") })
	if err != nil {
		t.Fatal(err)
	}
	for s := 9 * time.Second; s < 28*time.Second; s += 100 * time.Millisecond {
		next.Tune(at(s))
		offer(srcNext.Lane("c"), at(s), 100*time.Millisecond, 10, 0)
		if s%time.Second == 0 {
			_ = ex.Publish(next.Reports(at(s), nil))
		}
	}
	latest, _ := ex.Report("c", "p/0")
	old.Lose(srcOld, at(28500*time.Millisecond))
	ctl.Close(srcCtl, at(28500*time.Millisecond))
	old.Tune(at(28600 * time.Millisecond))
	ctl.Tune(at(28600 * time.Millisecond))
	lost, closed := old.Controller("c").Snapshot().ClusterPassed, ctl.Controller("c").Snapshot().ClusterPassed
	t.Logf("passes of p/0: %d committed by the old owner, %d in the next owner's latest report; the old owner counts %.0f after Lose, %.0f after Close",
		before.Total.Passed, latest.Total.Passed, lost, closed)
	if lost < float64(latest.Total.Passed) {
		t.Errorf("after Lose the node counts %.0f passes, fewer than the %d of the source's latest report", lost, latest.Total.Passed)
	}
	if closed >= float64(latest.Total.Passed) {
		t.Errorf("after Close the node counts %.0f passes: the lane's own counts were expected to miss the next owner's", closed)
	}
}
