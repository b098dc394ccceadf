package flow

import (
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
			for _, tr := range trees {
				if !outage(now) {
					reports = tr.Reports(at(now+100*time.Millisecond), reports[:0])
					_ = ex.Publish(reports)
				}
				tr.Sync(at(now+100*time.Millisecond), &ex)
			}
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
