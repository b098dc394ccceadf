package flow

import (
	"math"
	"testing"
	"time"
)

// Nothing exists per budget until a source needs it: a lane opens on the
// budget's first event on the source (its ancestors' with it), and the
// budget's controller with the first lane on the node.
func TestLazyLanes(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "acct", Target: 100, Period: time.Minute},
		{Name: "a", Target: 50, Period: time.Minute, Parent: "acct"},
		{Name: "b", Target: 50, Period: time.Minute, Parent: "acct"},
		{Name: "idle", Target: 50, Period: time.Minute},
	})
	src := mustOpen(t, tree, "p0", t0)
	if src.Len() != 0 || len(tree.Controllers()) != 0 || tree.Controller("a") != nil {
		t.Fatalf("at open: %d lanes, %d controllers", src.Len(), len(tree.Controllers()))
	}
	if _, ok := tree.Budget("a"); !ok {
		t.Fatal("Budget(a) unknown")
	}
	l := src.Get([]byte("a"), t0)
	if l == nil || src.Len() != 2 || src.Peek("acct") == nil || l.parent != src.Peek("acct") {
		t.Fatalf("first event of a: lane %v, %d lanes open", l, src.Len())
	}
	if cs := tree.Controllers(); len(cs) != 2 || cs[0].Name() != "acct" || cs[1].Name() != "a" {
		t.Fatalf("controllers %v, want acct then a", cs)
	}
	if src.Get([]byte("a"), t0) != l || src.Lane("a") != l {
		t.Fatal("a second lookup opened another lane")
	}
	if src.Get([]byte("nope"), t0) != nil || src.Lane("nope") != nil {
		t.Fatal("a lane for an unknown budget")
	}
	name, unknown := []byte("a"), []byte("nope")
	if n := testing.AllocsPerRun(100, func() {
		src.Get(name, t0)
		src.Get(unknown, t0)
	}); n != 0 {
		t.Fatalf("lookups allocate %v times", n)
	}
	// the same budget on another source shares the controller
	other := mustOpen(t, tree, "p1", t0)
	if l2 := other.Lane("a"); l2 == nil || l2.c != l.c || len(tree.Controllers()) != 2 {
		t.Fatal("second source: another controller")
	}
}

// A controller created for a first lane reads its peers at once: here they
// spent the budget already, so the lane's first event is rejected as
// exhausted rather than passed on a cold start.
func TestActivationReadsPeers(t *testing.T) {
	b := Budget{Name: "c", Target: 10, Begin: t0, End: at(time.Minute)}
	ex := &MemoryExchange{}
	_ = ex.Publish([]Report{{Budget: "c", Source: "p9", At: at(time.Second), Since: t0,
		Total: Counters{Offered: 500, Passed: 10}, InPeriod: Counters{Offered: 500, Passed: 10}}})
	for _, c := range []struct {
		name      string
		opts      []Option
		exhausted bool
	}{
		{"with Peers", []Option{Peers(ex)}, true},
		{"without", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := mustTree(t, []Budget{b}, c.opts...)
			l := mustOpen(t, tree, "p0", at(time.Second)).Lane("c")
			if v := l.Decide(at(time.Second), 0); (v.Reason == ReasonExhausted) != c.exhausted {
				t.Fatalf("first event: %+v, exhausted should be %v", v, c.exhausted)
			}
		})
	}
}

// Tune and Sync visit the controllers with traffic, and the others when
// due (IdleRetune after their last visit, a period's end); a Sync also
// visits those a Tune found busy since the last Sync. Snapshot().At tells
// a controller's last visit.
func TestVisitRule(t *testing.T) {
	ex := &MemoryExchange{}
	tree := mustTree(t, []Budget{
		{Name: "busy", Target: 1e6, Begin: t0, End: at(time.Hour)},
		{Name: "idle", Target: 1e6, Begin: t0, End: at(time.Hour)},
		{Name: "per", Target: 1e6, Period: 3 * time.Second},
	}, IdleRetune(2*time.Second), Peers(ex)) // with Peers, new controllers need no Sync
	src := mustOpen(t, tree, "p0", t0)
	for _, b := range []string{"busy", "idle", "per"} {
		src.Lane(b)
	}
	last := func(b string) time.Duration { return tree.Controller(b).Snapshot().At.Sub(t0) }
	want := map[time.Duration][3]time.Duration{ // after the round at: busy, idle, per
		1000 * time.Millisecond: {1000 * time.Millisecond, 0, 0},
		1500 * time.Millisecond: {1500 * time.Millisecond, 0, 0},
		2000 * time.Millisecond: {1500 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		3000 * time.Millisecond: {1500 * time.Millisecond, 2 * time.Second, 3 * time.Second},
		3500 * time.Millisecond: {3500 * time.Millisecond, 2 * time.Second, 3 * time.Second},
		4900 * time.Millisecond: {3500 * time.Millisecond, 4 * time.Second, 3 * time.Second},
		5000 * time.Millisecond: {3500 * time.Millisecond, 4 * time.Second, 5 * time.Second},
	}
	for k := 1; k <= 50; k++ {
		now := time.Duration(k) * 100 * time.Millisecond
		if k == 15 {
			tree.Sync(at(now), ex)
		} else {
			tree.Tune(at(now))
		}
		if k < 10 {
			offer(src.Lane("busy"), at(now), 100*time.Millisecond, 10, 0)
		}
		if w, ok := want[now]; ok {
			got := [3]time.Duration{last("busy"), last("idle"), last("per")}
			if got != w {
				t.Fatalf("after the round at %v: last visits %v, want %v", now, got, w)
			}
		}
	}
}

// A busy controller of a budget its traffic cannot exhaust is visited by
// Tune until its warm-up ends, then by Sync only; it passes every event
// meanwhile. Once what is left comes within four times the traffic to the
// period's end (the target lowered), Tune visits it again.
func TestSlackLeftToSync(t *testing.T) {
	ex := &MemoryExchange{}
	far := Budget{Name: "far", Target: 1e9, Begin: t0, End: at(time.Hour)}
	tree := mustTree(t, []Budget{far}, Peers(ex))
	l := mustOpen(t, tree, "p0", t0).Lane("far")
	last := func() time.Duration { return tree.Controller("far").Snapshot().At.Sub(t0) }
	round := func(k int) time.Duration {
		now := time.Duration(k) * 100 * time.Millisecond
		if v := offer(l, at(now), 100*time.Millisecond, 10, 0); v != 10 && k <= 150 {
			t.Fatalf("at %v: %d of 10 events passed", now, v)
		}
		if k%10 == 0 {
			tree.Sync(at(now), ex)
		} else {
			tree.Tune(at(now))
		}
		return now
	}
	for k := 1; k <= 30; k++ { // 3 s: warming up, visited every round
		if now := round(k); last() != now {
			t.Fatalf("warming up, after the round at %v: last visit %v", now, last())
		}
	}
	slackRounds := 0
	for k := 31; k <= 150; k++ {
		now := round(k)
		switch {
		case k%10 == 0 && last() != now:
			t.Fatalf("the Sync at %v did not visit it (last %v)", now, last())
		case k%10 != 0 && last() != now:
			slackRounds++
		}
	}
	// The warm-up ends at 5 s (two sync intervals and StaleAfter after
	// the first tune); the Tunes from then to 15 s are 90.
	if slackRounds < 80 || slackRounds > 90 {
		t.Fatalf("left to Sync in %d Tunes from 3 s to 15 s, want 80 to 90 (those after the warm-up)", slackRounds)
	}
	// Lowered to a target its traffic can exhaust: Tune visits it again.
	near := far
	near.Target = 2000
	if _, err := tree.Apply([]Change{{Budget: near}}, at(15*time.Second)); err != nil {
		t.Fatal(err)
	}
	round(151)
	round(152)
	if now := round(153); last() != now {
		t.Fatalf("a budget near its target, after the round at %v: last visit %v", now, last())
	}
}

// A controller left out of the rounds while its lanes were idle measures
// the same local rate, once traffic resumes, as one visited every round.
func TestIdleSpellRate(t *testing.T) {
	b := []Budget{{Name: "c", Target: 1e5, Begin: t0, End: at(time.Hour)}}
	trees := []*Tree{mustTree(t, b), mustTree(t, b, IdleRetune(time.Nanosecond))}
	var lanes []*Lane
	for _, tr := range trees {
		lanes = append(lanes, mustOpen(t, tr, "p0", t0).Lane("c"))
	}
	for k := 0; k < 300; k++ { // 30 s: traffic, 10 s of silence, traffic
		now := at(time.Duration(k) * 100 * time.Millisecond)
		var snaps [2]Snapshot
		for i, tr := range trees {
			tr.Tune(now)
			snaps[i] = tr.Controller("c").Snapshot()
			if k < 100 || k >= 200 {
				offer(lanes[i], now, 100*time.Millisecond, 10, 0)
			}
		}
		if k >= 200 && (snaps[0].LocalRate != snaps[1].LocalRate || snaps[0].ClusterRate != snaps[1].ClusterRate) {
			t.Fatalf("at %v: local rate %v and %v, cluster rate %v and %v", now.Sub(t0),
				snaps[0].LocalRate, snaps[1].LocalRate, snaps[0].ClusterRate, snaps[1].ClusterRate)
		}
	}
}

// The score distribution of a scored budget decays by the time since its
// last tune: skipping the rounds of an idle spell forgets as much as
// visiting every one.
func TestIdleSpellDecay(t *testing.T) {
	b := []Budget{{Name: "s", Target: 1e5, Begin: t0, End: at(time.Hour), Scored: true}}
	trees := []*Tree{mustTree(t, b), mustTree(t, b, IdleRetune(time.Nanosecond))}
	var lanes []*Lane
	for _, tr := range trees {
		lanes = append(lanes, mustOpen(t, tr, "p0", t0).Lane("s"))
	}
	for k := 0; k < 1200; k++ { // 2 min: scores for 10 s, then silence
		now := at(time.Duration(k) * 100 * time.Millisecond)
		for i, tr := range trees {
			tr.Tune(now)
			if k < 100 {
				offer(lanes[i], now, 100*time.Millisecond, 10, float64(k%10))
			}
		}
	}
	last := at(120 * time.Second)
	var w [2]float64
	for i, tr := range trees {
		tr.Sync(last, &MemoryExchange{}) // visits both (pending), so both decay up to the same instant
		c := tr.Controller("s")
		c.mu.Lock()
		w[i] = c.sk.total
		c.mu.Unlock()
	}
	if w[0] <= 0 || math.Abs(w[0]/w[1]-1) > 1e-9 {
		t.Fatalf("sketch weight %v after skipping the idle rounds, %v after visiting them", w[0], w[1])
	}
}

// Scores that drift away from the sketch's (the node passes far more than
// its cut meant to) are forgotten at a quarter per tune that brings new
// scores, and at the slow rate while none come.
func TestDriftForgets(t *testing.T) {
	b := []Budget{{Name: "s", Target: 1e5, Begin: t0, End: at(time.Hour), Scored: true}}
	tree := mustTree(t, b)
	l := mustOpen(t, tree, "p0", t0).Lane("s")
	c := tree.Controller("s")
	old := func() float64 { // the weight of the scores from before the drift
		c.mu.Lock()
		defer c.mu.Unlock()
		var w float64
		for i := scoreBin(1); i <= scoreBin(10); i++ {
			w += c.sk.w[i]
		}
		return w
	}
	round := func(k int, base float64, events int) {
		now := at(time.Duration(k) * 100 * time.Millisecond)
		tree.Tune(now)
		for i := 0; i < events; i++ {
			l.Decide(now.Add(time.Duration(i)*100*time.Millisecond/time.Duration(events)), base+float64(i%10))
		}
	}
	for k := 0; k < 300; k++ { // 30 s of scores 1..10
		round(k, 1, 10)
	}
	before := old()
	for k := 300; k < 320; k++ { // 2 s of scores 101..110: all above the cut
		round(k, 101, 10)
	}
	if w := old(); w > before/100 {
		t.Fatalf("old scores weigh %.1f after 2 s of drift, %.1f before: not forgotten", w, before)
	}
	// silence: the slow decay only (ScoreMemory 5 min), by the time
	// between the controller's visits
	mid, from := old(), c.Snapshot().At
	for k := 320; k < 340; k++ {
		round(k, 0, 0)
	}
	d := c.Snapshot().At.Sub(from)
	if w, want := old(), mid*math.Exp2(-d.Seconds()/300); d < time.Second || math.Abs(w/want-1) > 1e-9 {
		t.Fatalf("old scores weigh %v after %v of silence, want %v (the slow decay)", w, d, want)
	}
}

// A controller created late (its budget's first event on the node comes
// long after the tree started) knows that the node offered nothing before:
// it measures the same local rate as one that existed, idle, all along.
// Else a backlog read at once when a partition comes back (after a broker
// restart dropped every controller) is taken for the rate, and passes at a
// tenth of the fraction it needs.
func TestLateControllerRate(t *testing.T) {
	b := []Budget{{Name: "c", Target: 1e5, Begin: t0, End: at(time.Hour)}}
	trees := []*Tree{mustTree(t, b), mustTree(t, b)}
	srcs := []*Source{mustOpen(t, trees[0], "p0", t0), mustOpen(t, trees[1], "p0", t0)}
	srcs[0].Lane("c") // open, idle, from the start
	for k := 0; k < 120; k++ {
		now := at(time.Duration(k) * 100 * time.Millisecond)
		var snaps [2]Snapshot
		for i, tr := range trees {
			tr.Tune(now)
			if k < 100 {
				continue
			}
			n := 10
			if k == 100 {
				n = 500 // a backlog, read at once
			}
			offer(srcs[i].Get([]byte("c"), now), now, 100*time.Millisecond, n, 0)
			snaps[i] = tr.Controller("c").Snapshot()
		}
		if k > 100 && snaps[0].LocalRate != snaps[1].LocalRate {
			t.Fatalf("at %v: local rate %v created at the start, %v created at the first event",
				now.Sub(t0), snaps[0].LocalRate, snaps[1].LocalRate)
		}
	}
}

// The exchange's lateness is the node's: a controller created after others
// learnt it starts from it, not from zero (which would make up a lag near
// the end over too short a horizon, and judge peers stale too soon).
func TestLateControllerLateness(t *testing.T) {
	bs := []Budget{{Name: "a", Target: 1e5, Begin: t0, End: at(time.Hour)}, {Name: "b", Target: 1e5, Begin: t0, End: at(time.Hour)}}
	tree := mustTree(t, bs)
	src := mustOpen(t, tree, "p0", t0)
	src.Lane("a")
	var ex MemoryExchange
	peer := func(sent, seen time.Duration) { // a peer's report made at sent, read at seen
		_ = ex.Publish([]Report{{Budget: "a", Source: "p1", At: at(sent), Since: t0, Total: Counters{Offered: 100}}})
		tree.Sync(at(seen), &ex)
	}
	peer(time.Second, 2*time.Second)
	peer(3*time.Second, 5*time.Second) // 1 s later than a sync interval
	late := func(name string) int64 {
		c := tree.Controller(name)
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.lateness
	}
	if la := late("a"); la <= 0 {
		t.Fatalf("a learnt a lateness of %v", time.Duration(la))
	}
	if src.Get([]byte("b"), at(6*time.Second)); late("b") != late("a") {
		t.Fatalf("b starts with a lateness of %v, a has learnt %v", time.Duration(late("b")), time.Duration(late("a")))
	}
}

// A light budget (five events a tune interval on the node) rests once
// warmed up: it is visited about once per restEvents events rather than
// every round, a Sync that held its visit back lends the visit its
// exchange (the tree has none of its own, as in the worker), a burst
// brings the visit forward to the next round, and the budget stays on its
// course throughout.
func TestLightBudgetRests(t *testing.T) {
	ex := &MemoryExchange{}
	b := Budget{Name: "light", Target: 25 * 3600, Begin: t0, End: at(time.Hour)} // 25/s of 50/s
	tree := mustTree(t, []Budget{b})
	src := mustOpen(t, tree, "p0", t0)
	l := src.Lane("light")
	c := tree.Controller("light")
	visited := func(now time.Duration) bool { return c.Snapshot().At.Equal(at(now)) }
	passed := 0
	round := func(k, events int) time.Duration {
		now := time.Duration(k) * 100 * time.Millisecond
		passed += offer(l, at(now), 100*time.Millisecond, events, 0)
		if k%10 == 0 {
			if err := ex.Publish(tree.Reports(at(now), nil)); err != nil {
				t.Fatal(err)
			}
			tree.Sync(at(now), ex)
		} else {
			tree.Tune(at(now))
		}
		return now
	}
	for k := 1; k <= 60; k++ { // the warm-up ends at 5 s
		round(k, 5)
	}
	visits, lent := 0, 0
	syncHeld := false
	for k := 61; k <= 300; k++ {
		now := round(k, 5)
		if !visited(now) {
			syncHeld = syncHeld || k%10 == 0
			continue
		}
		visits++
		c.mu.Lock()
		synced := c.synced
		c.mu.Unlock()
		if syncHeld {
			if synced != at(now).UnixNano() {
				t.Fatalf("the visit at %v, after a Sync held it back, did not read the peers (last read at %v)", now, time.Duration(synced-t0.UnixNano()))
			}
			lent++
		}
		syncHeld = false
	}
	if lent == 0 {
		t.Fatal("no Sync held the visit back")
	}
	// 240 rounds of 5 events: a visit per 20 events is 60
	if visits < 50 || visits > 80 {
		t.Fatalf("%d visits in 240 rounds of 5 events each, want 50 to 80 (one per %d events)", visits, restEvents)
	}
	ideal := 25.0 * 30
	if math.Abs(float64(passed)-ideal) > 0.02*ideal {
		t.Fatalf("%d passes by 30 s, want within 2%% of the ideal %.0f", passed, ideal)
	}
	t.Logf("%d visits in 240 rounds, %d after a Sync held them back; %d passes by 30 s for an ideal %.0f", visits, lent, passed, ideal)
	// A burst: the round it comes in visits, though within the rest.
	for k := 301; ; k++ {
		if now := round(k, 5); visited(now) {
			break
		}
	}
	if now := round(int(c.Snapshot().At.Sub(t0)/(100*time.Millisecond))+1, 200); !visited(now) { // offered before the round
		t.Fatalf("the round of a burst of 200 events (at %v) did not visit; last visit %v", now, c.Snapshot().At.Sub(t0))
	}
}
