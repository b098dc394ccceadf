package flow

import (
	"math/rand/v2"
	"testing"
	"time"
)

// slowExchange shows a publication delay after it was made, and loses a
// fraction lose of them.
type slowExchange struct {
	delay   time.Duration
	lose    float64
	rng     *rand.Rand
	pending []pendingReport
	shown   MemoryExchange
}

type pendingReport struct {
	at time.Time
	r  []Report
}

func (x *slowExchange) publish(now time.Time, rs []Report) {
	if x.lose > 0 && x.rng.Float64() < x.lose {
		return
	}
	x.pending = append(x.pending, pendingReport{now.Add(x.delay), append([]Report(nil), rs...)})
}

func (x *slowExchange) advance(now time.Time) {
	for len(x.pending) > 0 && !x.pending[0].at.After(now) {
		_ = x.shown.Publish(x.pending[0].r)
		x.pending = x.pending[1:]
	}
}

// cluster is n nodes of one budget (at 100 events/s each unless events is
// changed), started together, publishing every second through x.
type cluster struct {
	trees  []*Tree
	lanes  []*Lane
	passed []int
	dead   []bool // a dead node neither publishes nor decides
	events int    // per node per 100 ms step (default 10)
	// straggle, when set, gives node i's events at now instead of events
	straggle func(i int, now time.Duration) int
}

func newCluster(t *testing.T, b Budget, n int) *cluster {
	c := &cluster{passed: make([]int, n), dead: make([]bool, n), events: 10}
	for i := range n {
		tr := mustTree(t, []Budget{b}, PriorShare(1/float64(n)))
		c.trees = append(c.trees, tr)
		c.lanes = append(c.lanes, mustOpen(t, tr, string(rune('a'+i)), t0).Lane(b.Name))
	}
	return c
}

// run steps the cluster from `from` to `to` in 100 ms steps; every node
// tunes, publishes and syncs each second (at its own phase).
func (c *cluster) run(x *slowExchange, from, to time.Duration) int {
	total := 0
	for now := from; now < to; now += 100 * time.Millisecond {
		x.advance(at(now))
		for i, tr := range c.trees {
			if c.dead[i] {
				continue
			}
			if (now/(100*time.Millisecond))%10 == time.Duration(i%10) {
				x.publish(at(now), tr.Reports(at(now), nil))
				tr.Sync(at(now), &x.shown)
			} else {
				tr.Tune(at(now))
			}
			events := c.events
			if c.straggle != nil {
				events = c.straggle(i, now)
			}
			k := offer(c.lanes[i], at(now), 100*time.Millisecond, events, 0)
			c.passed[i] += k
			total += k
		}
	}
	return total
}

// Reports that an exchange shows 2.5 s late, with a publication lost now
// and then, still stand for their sources: the controller learns how late
// they come and keeps the peers (and their traffic) in the cluster
// instead of taking them for gone after three sync intervals.
func TestLateReportsStandForTheirSources(t *testing.T) {
	b := Budget{Name: "c", Target: 12000, Begin: t0, End: at(120 * time.Second)} // 100/s of 800/s
	c := newCluster(t, b, 8)
	x := &slowExchange{delay: 2500 * time.Millisecond, lose: 0.2, rng: rand.New(rand.NewPCG(1, 2))}
	c.run(x, 0, 60*time.Second)
	s := c.trees[0].Controller("c").Snapshot()
	t.Logf("after 60 s: cluster rate %.0f/s (800 offered), working rate %.4f, lateness %v", s.ClusterRate, s.WorkingPassRate, time.Duration(c.trees[0].Controller("c").lateness))
	if s.ClusterRate < 700 || s.ClusterRate > 900 {
		t.Errorf("cluster rate %.0f/s, want about 800 (peers taken for gone?)", s.ClusterRate)
	}
	passed := c.run(x, 60*time.Second, 120*time.Second)
	if passed < 5880 || passed > 6120 {
		t.Errorf("%d passes in the second half, want 6000 ± 2%%", passed)
	}
}

// Nodes that start together before any report can arrive (the exchange is
// 2 s late) count the sources they have not heard from as passing like
// themselves: the cluster does not pass its first seconds several times
// over.
func TestStartBeforeReportsArrive(t *testing.T) {
	b := Budget{Name: "c", Target: 12000, Begin: t0, End: at(120 * time.Second)}
	c := newCluster(t, b, 8)
	x := &slowExchange{delay: 2 * time.Second}
	passed := c.run(x, 0, 5*time.Second)
	t.Logf("%d passes in the first 5 s (ideal 500)", passed)
	if passed < 450 || passed > 550 {
		t.Errorf("%d passes in the first 5 s, want 500 ± 10%%", passed)
	}
}
