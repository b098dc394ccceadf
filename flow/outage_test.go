package flow

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// When the exchange goes down (every peer's report goes stale at once),
// nodes keep pacing at their share: the passes made during the outage stay
// near the ideal, instead of each node taking its peers' unreported passes
// for a lag and making it up alone.
func TestExchangeOutage(t *testing.T) {
	const nodes = 3
	b := []Budget{{Name: "c", Target: 3000, Begin: t0, End: at(100 * time.Second)}} // 30/s
	var ex MemoryExchange
	var trees []*Tree
	var lanes []*Lane
	for i := range nodes {
		tr := mustTree(t, b)
		tr.SetShare(1.0 / nodes)
		trees = append(trees, tr)
		lanes = append(lanes, mustOpen(t, tr, string(rune('a'+i)), t0).Lane("c"))
	}
	passed := 0
	outage := func(now time.Duration) bool { return now >= 30*time.Second && now < 60*time.Second }
	var inOutage, before int
	var reports []Report
	for k := 0; k < 1000; k++ { // 100 s in 100 ms steps, 100 events/s per node
		now := time.Duration(k) * 100 * time.Millisecond
		for i, tr := range trees {
			tr.Tune(at(now))
			n := offer(lanes[i], at(now), 100*time.Millisecond, 10, 0)
			passed += n
			if outage(now) {
				inOutage += n
			} else if now < 30*time.Second {
				before += n
			}
		}
		if k%10 == 9 { // sync every second
			reports = syncNodes(trees, &ex, at(now+100*time.Millisecond), !outage(now), reports)
		}
	}
	ideal := 3000.0 * 30 / 100
	t.Logf("passes: %d before the outage (ideal 900), %d during the 30 s outage (ideal %.0f), %d in the window", before, inOutage, ideal, passed)
	if float64(inOutage) > 1.1*ideal || float64(inOutage) < 0.9*ideal {
		t.Errorf("%d passes during the outage, want within 10%% of the ideal %.0f", inOutage, ideal)
	}
	if passed > 3030 || passed < 2970 {
		t.Errorf("%d passes in the window, want within 1%% of 3000", passed)
	}
}

// An outage of the exchange over traffic that the nodes do not share
// evenly (one node reads 60% of it): each node keeps taking the cluster's
// rate for what its peers last reported, so that all pass the same
// fraction, the one each extrapolates its peers' passes with. Taken for
// its share times its own traffic, the rate differs per node, and so do
// the fractions: the busy node underestimates its peers' passes, takes
// the cluster for behind, and makes up a lag that is not there.
//
// And the same with a partition that moves in the outage: the last
// report of the lane that closed tells nothing of the exchange, and the
// source's passes on its new node are estimated at the rates it had. And
// with the busiest node's traffic paused for half the span of its last
// report before the outage: once that report is stale, its peers take its
// traffic for what it offered over its last reports (holdRates), not over
// that span alone. Until then (StaleAfter, 3 s) they extrapolate the
// span's rate, as they would any fresh report's, and pass more: the case
// has wider bounds (without holdRates: 2,450 passes, 1.23×, and an
// estimate 501 off).
func TestExchangeOutageUnevenTraffic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event func(k int) string
		tol   float64 // of the ideal: the outage's passes, and the estimates' error
	}{
		{"steady", func(int) string { return "" }, 0.05},
		{"partition moves", func(k int) string { return map[int]string{120: "move"}[k] }, 0.05},
		{"node paused before", func(k int) string {
			if k >= 95 && k < 100 {
				return "pause"
			}
			return ""
		}, 0.15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inOutage, passed, worst := unevenOutage(t, tc.event)
			ideal := 10000 * 8.0 / 40
			t.Logf("passes: %d during the 8 s outage (ideal %.0f), worst estimate error %.0f; %d in the window", inOutage, ideal, worst, passed)
			if d := float64(inOutage)/ideal - 1; d > tc.tol || d < -tc.tol {
				t.Errorf("%d passes during the outage, want within %.0f%% of the ideal %.0f", inOutage, 100*tc.tol, ideal)
			}
			if worst > tc.tol*ideal {
				t.Errorf("a node's estimate of the cluster's passes was %.0f off during the outage, want within %.0f", worst, tc.tol*ideal)
			}
			if passed > 10050 || passed < 9950 {
				t.Errorf("%d passes in the window, want within 0.5%% of 10000", passed)
			}
		})
	}
}

// unevenOutage runs three nodes of 4 sources each, reading 600, 250 and
// 150 events/s, through an outage of the exchange from 10 to 18 s of a
// 40 s window of 10,000. event(k) says what happens at step k (100 ms
// each): "move", node 0's first source moves to node 1; "pause", node 0
// gets no events. It returns the passes in the outage and in the window, and
// the largest error of a node's estimate of the cluster's passes in the
// outage.
func unevenOutage(t *testing.T, event func(k int) string) (inOutage, passed int, worst float64) {
	const nodes, lanesPer = 3, 4
	perStep := [nodes]int{60, 25, 15} // events per 100 ms
	b := []Budget{{Name: "c", Target: 10000, Begin: t0, End: at(40 * time.Second)}}
	var ex MemoryExchange
	var trees []*Tree
	var srcs [nodes][]*Source
	for i := range nodes {
		tr := mustTree(t, b)
		tr.SetShare(1.0 / nodes)
		trees = append(trees, tr)
		for j := range lanesPer {
			srcs[i] = append(srcs[i], mustOpen(t, tr, fmt.Sprintf("p%d", i*lanesPer+j), t0))
		}
	}
	const from, to = 10 * time.Second, 18 * time.Second
	outage := func(now time.Duration) bool { return now >= from && now < to }
	var reports []Report
	for k := 0; k < 400; k++ { // 40 s in 100 ms steps
		now := time.Duration(k) * 100 * time.Millisecond
		ev := event(k)
		if ev == "move" {
			closed := trees[0].Close(srcs[0][0], at(now))
			s, err := trees[1].Open("p0", at(now), func(string) (Report, bool) { return closed[0], true })
			if err != nil {
				t.Fatal(err)
			}
			srcs[0], srcs[1] = srcs[0][1:], append(srcs[1], s)
			perStep[0], perStep[1] = perStep[0]-15, perStep[1]+15
		}
		for i, tr := range trees {
			tr.Tune(at(now))
			step := perStep[i]
			if i == 0 && ev == "pause" {
				step = 0
			}
			for j, s := range srcs[i] {
				n := step / len(srcs[i])
				if j < step%len(srcs[i]) {
					n++
				}
				p := offer(s.Lane("c"), at(now), 100*time.Millisecond, n, 0)
				passed += p
				if outage(now) {
					inOutage += p
				}
			}
		}
		if outage(now) {
			for _, tr := range trees {
				worst = max(worst, math.Abs(tr.Controller("c").Snapshot().ClusterPassed-float64(passed)))
			}
		}
		if k%10 == 9 { // sync every second
			reports = syncNodes(trees, &ex, at(now+100*time.Millisecond), !outage(now), reports)
		}
	}
	return inOutage, passed, worst
}

// syncNodes publishes each tree's reports at now, unless the exchange is
// down (!up), and syncs it; reports is a buffer, returned for reuse.
func syncNodes(trees []*Tree, ex Exchange, now time.Time, up bool, reports []Report) []Report {
	for _, tr := range trees {
		if up {
			reports = tr.Reports(now, reports[:0])
			_ = ex.Publish(reports)
		}
		tr.Sync(now, ex)
	}
	return reports
}
