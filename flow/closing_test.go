package flow

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Every node reads a source's rate from the same two reports, its owner
// from its own reports as the exchange shows them: as of one instant,
// they agree, whatever reports each saw before or after.
func TestSmoothedAgreesAsOfAnInstant(t *testing.T) {
	rep := func(s time.Duration, off uint64) Report {
		return Report{Source: "p", At: at(s), Since: t0, Total: Counters{Offered: off}}
	}
	var stream []Report
	for i := 1; i <= 20; i++ {
		stream = append(stream, rep(time.Duration(i)*time.Second, uint64(100*i+37*(i%3))))
	}
	span := int64(4 * time.Second)
	var a, b smoothed
	for _, r := range stream {
		a.add(&r)
	}
	for _, r := range stream[6:18] { // b began later, and has not seen the last two
		b.add(&r)
	}
	cut := at(17500 * time.Millisecond).UnixNano()
	if ra, rb := a.rateAt(cut, span), b.rateAt(cut, span); ra != rb {
		t.Errorf("as of 17.5 s: %.3f and %.3f from the same reports", ra, rb)
	}
	if want := float64(stream[16].Total.Offered-stream[12].Total.Offered) / 4; a.rateAt(cut, span) != want {
		t.Errorf("as of 17.5 s: %.3f, want the rate between the reports at 13 s and 17 s, %.3f", a.rateAt(cut, span), want)
	}
	// One report: the rate since the source began. Counts that went
	// back (work rolled back) start over.
	var c smoothed
	c.add(&stream[0])
	if got := c.rateAt(at(time.Minute).UnixNano(), span); got != 137 {
		t.Errorf("after one report: %.1f, want its rate since it began, 137", got)
	}
	back := rep(2*time.Second, 50)
	c.add(&back)
	if got := c.rateAt(at(time.Minute).UnixNano(), span); got != 25 {
		t.Errorf("after counts went back: %.1f, want the rate since the source began of the report that rolled back, 25", got)
	}
}

// A source's first report made just after its first event (its commit at
// once) tells no rate: one event over 0.1 ms is not 10,000 a second.
func TestSmoothedNoRateOverAnInstant(t *testing.T) {
	span := int64(4 * time.Second)
	began := at(10 * time.Second)
	first := Report{Source: "p", At: began.Add(100 * time.Microsecond), Since: began, Total: Counters{Offered: 1}}
	var w smoothed
	w.add(&first)
	if got := w.rateAt(at(11*time.Second).UnixNano(), span); got != 0 {
		t.Errorf("one event, reported 0.1 ms after the source began: %.1f a second, want 0 (unknown)", got)
	}
	second := Report{Source: "p", At: began.Add(200 * time.Millisecond), Since: began, Total: Counters{Offered: 2}}
	w.add(&second)
	if got := w.rateAt(at(11*time.Second).UnixNano(), span); got != 0 {
		t.Errorf("two reports 0.2 s after the source began: %.1f a second, want 0 (unknown)", got)
	}
	later := Report{Source: "p", At: began.Add(2 * time.Second), Since: began, Total: Counters{Offered: 3}}
	w.add(&later)
	if got, want := w.rateAt(at(13*time.Second).UnixNano(), span), 2/later.At.Sub(first.At).Seconds(); got != want {
		t.Errorf("2 events between the first report and one 2 s after the source began: %.3f a second, want %.3f", got, want)
	}
}

// The misses of sources published together (at one instant, by one node)
// are judged by their sum: sources that share one allowance, whose misses
// cancel out, teach no error; the same misses at different instants do.
func TestPeerErrGroupsSourcesPublishedTogether(t *testing.T) {
	c := &Controller{}
	for range 40 {
		c.misses = append(c.misses, miss{at: 1, pred: 100, d: 30}, miss{at: 1, pred: 100, d: -30})
		c.learnErr()
	}
	together := c.peerErr
	c = &Controller{}
	for range 40 {
		c.misses = append(c.misses, miss{at: 1, pred: 100, d: 30}, miss{at: 2, pred: 100, d: -30})
		c.learnErr()
	}
	apart := c.peerErr
	t.Logf("peer error: %.2f when the misses cancel within a node, %.2f when not", together, apart)
	if together > 1 || apart < 20 {
		t.Errorf("peer error %.2f together (want ~0), %.2f apart (want ~30)", together, apart)
	}
}

// A controller that has just started learns the error of its estimates
// from its first misses as they are, not from an average that starts at
// 0: its hard stop's margin is not next to nothing through its first
// seconds.
func TestPeerErrFromTheFirstMisses(t *testing.T) {
	c := &Controller{}
	c.misses = append(c.misses, miss{at: 1, pred: 400, d: 20}, miss{at: 2, pred: 400, d: -20})
	c.learnErr()
	if c.peerErr < 19 || c.peerErr > 21 {
		t.Errorf("peer error %.2f after two misses of 20, want 20", c.peerErr)
	}
	// After that it averages the last 16 or so.
	for range 200 {
		c.misses = append(c.misses, miss{at: 1, pred: 400, d: 10})
		c.learnErr()
	}
	if c.peerErr < 9.5 || c.peerErr > 10.5 {
		t.Errorf("peer error %.2f after many misses of 10, want 10", c.peerErr)
	}
}

// jitterCluster runs nodes of the given rates (events per second, each
// drawn anew every second at ±jitter), publishing every second at their
// own phases through an exchange 300 ms late, and returns the passes.
func jitterCluster(t *testing.T, b Budget, rates []float64, jitter float64, seed uint64, end time.Duration) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	n := len(rates)
	var trees []*Tree
	var lanes []*Lane
	for i := range n {
		tr := mustTree(t, []Budget{b}, PriorShare(1/float64(n)))
		trees = append(trees, tr)
		lanes = append(lanes, mustOpen(t, tr, string(rune('a'+i)), t0).Lane(b.Name))
	}
	x := &slowExchange{delay: 300 * time.Millisecond}
	factor := make([]float64, n)
	carry := make([]float64, n)
	total := 0
	const step = 100 * time.Millisecond
	for now := time.Duration(0); now < end; now += step {
		if now%time.Second == 0 {
			for i := range factor {
				factor[i] = max(0, 1+jitter*rng.NormFloat64())
			}
		}
		x.advance(at(now))
		for i, tr := range trees {
			if (now/step)%10 == time.Duration(i*10/n) {
				x.publish(at(now), tr.Reports(at(now), nil))
				tr.Sync(at(now), &x.shown)
			} else {
				tr.Tune(at(now))
			}
			carry[i] += rates[i] * factor[i] * step.Seconds()
			k := int(carry[i])
			carry[i] -= float64(k)
			total += offer(lanes[i], at(now), step, k, 0)
		}
	}
	return total
}

// Nodes of very different rates whose traffic jitters by 30% from second
// to second: each node's picture of what its peers passed since their
// reports is off by their jitter, and the last decisions, made on it, set
// the final error. Over the closing stretch the nodes pass their parts of
// the wanted rate, which their peers know whatever the traffic did: the
// budget ends within a few passes of its target, never over it by more
// than a thousandth.
func TestClosingStretchEndsOnTarget(t *testing.T) {
	b := Budget{Name: "c", Target: 20000, Begin: t0, End: at(60 * time.Second)}
	rates := []float64{80, 250, 600, 1200}
	worst := 0.0
	for seed := uint64(1); seed <= 10; seed++ {
		got := jitterCluster(t, b, rates, 0.3, seed, 61*time.Second)
		e := (float64(got) - b.Target) / b.Target
		t.Logf("seed %d: %d passes (%+.3f%%)", seed, got, 100*e)
		if e > 0.001 || e < -0.003 {
			t.Errorf("seed %d: %d passes of %.0f (%+.3f%%), want within [-0.3%%, +0.1%%]", seed, got, b.Target, 100*e)
		}
		worst = max(worst, math.Abs(e))
	}
	t.Logf("worst final error %.3f%%", 100*worst)
}

// The closing stretch begins only on traffic known to have held steady: a
// source not heard from within two sync intervals before a second (no
// worker publishes during a broker outage) counts for nothing in it, not
// for its average since its start, which would hide the stall.
func TestSmoothedRateWithin(t *testing.T) {
	var w smoothed
	// 100 events a second, stalled from 4 s to 8 s, when it published
	// nothing either
	for _, r := range [][2]int{{1, 100}, {2, 200}, {3, 300}, {4, 400}, {8, 400}, {9, 500}, {10, 600}} {
		w.add(&Report{Source: "p", At: at(time.Duration(r[0]) * time.Second), Since: t0, Total: Counters{Offered: uint64(r[1])}})
	}
	sec, gap := int64(time.Second), int64(2*time.Second)
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{
		{3 * time.Second, 100},
		{5 * time.Second, 100}, // the report at 4 s is recent enough
		{7 * time.Second, 0},   // not heard from since 4 s: not its average since its start, 100
		{9500 * time.Millisecond, 100},
		{500 * time.Millisecond, 0}, // before its first report
	} {
		if got := w.rateWithin(at(tc.at).UnixNano(), sec, gap); got != tc.want {
			t.Errorf("second ending at %v: %.1f, want %.1f (rateAt: %.1f)", tc.at, got, tc.want, w.rateAt(at(tc.at).UnixNano(), sec))
		}
	}
}
