package flow

import (
	"container/heap"
	"math"
	"time"
)

// Tune re-tunes, from local traffic, the controllers that need it; call it
// every tune interval. Sync does the same with the peers' reports; call it
// every sync interval, after publishing.
//
// Tune and Sync (each a visit round) visit exactly these controllers:
//
//   - busy: a lane of it, or of one of its descendants, counted an event
//     or a reward since its last visit (the lane marks the controllers;
//     Sync also visits those that a Tune visited busy since the last
//     Sync). A Tune leaves a busy controller whose last visit found it
//     slack to the next Sync: a budget its traffic cannot exhaust (its
//     allowance is free: what is left is more than four times what the
//     cluster offers until the period's end), passing every event, past
//     its warm-up and outside its closing stretch, whose parameters the
//     traffic of one more sync interval cannot change; its allowance
//     still bounds what its lanes pass by the node's part of what is left.
//     A Tune or a Sync holds back the visit of a busy controller at rest
//     (a light budget, see restUntil) until its rest ends or its own
//     lanes offered restEvents events since its last visit; a visit a
//     Sync held back reads the peers from that Sync's exchange;
//   - due: the instant of the round has reached the earliest of
//   - its last visit plus IdleRetune, while it has open lanes (their next
//     event is then decided on a picture at most that old), or the end
//     of its rest when a busy visit was held back;
//   - the end of the period its last visit was in (period budgets with
//     open lanes: the next period is re-targeted when it begins);
//   - the instant its last lane closed plus DropAfter (it is then
//     dropped, if still without lanes, instead of visited);
//   - at once after SetShare changed its share;
//   - new: a controller is tuned when it is created (see Tree), and, if
//     the tree had no exchange to read its peers from, visited by the next
//     Sync.
//
// A visit by Sync reads the controller's peers from ex; so does a visit by
// Tune when the controller's last read is StaleAfter old (it was idle
// through the syncs) and the tree has an exchange (Peers). A round costs
// O(visited controllers × their lanes and peers, and held controllers ×
// their lanes), whatever the number of budgets.
//
// A controller left out keeps its parameters: its lanes pace by them for as
// long as Tune runs, and at the ideal fraction without catch-up once no
// round came for two tune intervals (a stalled tuner).
func (t *Tree) Tune(now time.Time) { t.round(now.UnixNano(), nil, false) }

// Sync reads the peers' reports of the controllers that need it (see Tune)
// from ex, or from the tree's exchange if ex is nil, and re-tunes them.
func (t *Tree) Sync(now time.Time, ex Exchange) {
	if ex == nil {
		ex = t.exchange()
	}
	t.round(now.UnixNano(), ex, true)
}

// round is one visit round at n.
func (t *Tree) round(n int64, ex Exchange, sync bool) {
	t.visitMu.Lock()
	defer t.visitMu.Unlock()
	if a := n + 2*int64(t.cfg.tune); a > t.alive.Load() {
		t.alive.Store(a)
	}
	prev := t.lastRound
	if t.rounds == 0 {
		t.began.Store(n)
	} else if n-prev > t.cfg.frozen() {
		t.resumed.Store(n)
	}
	t.lastRound = max(n, prev)
	t.rounds++
	if sync && ex != nil {
		t.syncEx = ex
	}
	list := t.gather(n, sync)
	for _, c := range list {
		t.visit(c, n, prev, ex, sync)
	}
	t.mu.Lock()
	for _, c := range list {
		if c.idx < 0 {
			continue
		}
		if !sync && c.wasBusy && !c.pending {
			c.pending = true
			t.pending = append(t.pending, c)
		}
		c.held = false
		t.schedule(c)
	}
	t.mu.Unlock()
	clear(list)
	t.visitBuf = list[:0]
}

// gather returns the controllers round visits, once each, and drops the
// controllers due to be dropped.
func (t *Tree) gather(n int64, sync bool) []*Controller {
	t.busyMu.Lock()
	busy := t.busy
	t.busy = t.spare[:0]
	t.busyMu.Unlock()

	list := t.visitBuf[:0]
	add := func(c *Controller, busy bool) {
		if c.idx < 0 {
			return // deleted or dropped
		}
		if c.stamp != t.rounds {
			c.stamp, c.wasBusy = t.rounds, false
			list = append(list, c)
		}
		c.wasBusy = c.wasBusy || busy
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range busy {
		c.busy.Store(false) // before the visit reads the counters
		if !sync && c.slack.Load() && c.idx >= 0 {
			c.skipped = true
			if !c.pending {
				c.pending = true
				t.pending = append(t.pending, c)
			}
			continue
		}
		if t.hold(c, n, sync) {
			continue
		}
		add(c, true)
	}
	clear(busy)
	t.spare = busy[:0]
	for len(t.due) > 0 && t.due[0].at <= n {
		e := heap.Pop(&t.due).(dueEntry)
		c := e.c
		if c.dueAt != e.at || c.idx < 0 {
			continue // superseded by an earlier entry, or gone
		}
		c.dueAt = math.MaxInt64
		switch at, empty := t.wantVisit(c); {
		case at > n:
			t.push(c, at)
		case empty:
			t.deactivate(c)
		default:
			add(c, false)
		}
	}
	if sync {
		for _, c := range t.pending {
			c.pending = false
			if !t.hold(c, n, true) {
				add(c, false)
			}
		}
		clear(t.pending)
		t.pending = t.pending[:0]
	}
	return list
}

// hold holds back, until its rest ends, the visit of a busy controller
// at rest (see restUntil) whose lanes offered fewer than restEvents events
// since its last visit, and reports whether it did; sync: the round is a
// Sync. Called under t.mu.
func (t *Tree) hold(c *Controller, n int64, sync bool) bool {
	r := c.rest.Load()
	if r <= n || c.idx < 0 {
		return false
	}
	c.mu.Lock()
	fresh := uint64(0)
	for _, l := range c.laneList {
		fresh += l.offered.Load() - l.seenOff
	}
	c.mu.Unlock()
	if fresh >= restEvents {
		c.rest.Store(0)
		return false
	}
	c.skipped, c.held = true, true // its counts are read at the visit
	c.syncHeld = c.syncHeld || sync
	if r < c.dueAt {
		t.push(c, r)
	}
	return true
}

// visit re-tunes c at n, reading its peers from ex when this is a Sync or
// when its last read is stale, and from the last Sync's exchange when a
// Sync held its visit back (Tree.hold). prev is the previous round's
// instant.
func (t *Tree) visit(c *Controller, n, prev int64, ex Exchange, sync bool) {
	c.mu.Lock()
	synced := c.synced
	c.mu.Unlock()
	if !sync {
		ex = nil
		if x := t.exchange(); x != nil && n-synced >= int64(t.cfg.staleAfter) {
			ex = x
		} else if c.syncHeld {
			ex = t.syncEx
		}
	}
	c.syncHeld = false
	if ex != nil {
		t.reps = ex.View(c.name, t.reps[:0])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skipped {
		c.skipped = false // busy all along: the visit's counts are since the last
	} else {
		c.fillGap(prev)
	}
	if ex != nil {
		c.syncLocked(n, t.reps)
		c.synced = n
	} else {
		c.tuneLocked(n, false)
	}
	c.lastVisit, c.forced = n, false
}

// fillGap records, at prev, the own counts of a controller that round
// prev left out: it was not busy then, so they were those of its last
// visit. The own rate read from the history stays right across rounds a
// controller sat out. Called under c.mu.
func (c *Controller) fillGap(prev int64) {
	h := &c.hist
	if h.n == 0 {
		return
	}
	if newest := h.newest(); newest < prev {
		// nothing offered, passed or meant since; the cluster was still
		// asked for the wanted rate
		want := 0.0
		if prm := c.params.Load(); !prm.cold {
			want = prm.q * float64(prev-newest) / 1e9
		}
		h.add(prev, 0, 0, 0, want)
	}
}

// wantVisit returns when c is due (see Tune), and whether it has no lane.
// Called under t.mu.
func (t *Tree) wantVisit(c *Controller) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.laneList) == 0 {
		return c.emptySince + int64(t.cfg.dropAfter), true
	}
	if c.forced {
		return math.MinInt64, false
	}
	// a busy visit held back is due when the rest ends; an idle
	// controller's visits come at IdleRetune, rest or not (they tell
	// silence)
	at := c.lastVisit + int64(t.cfg.idleRetune)
	if c.held {
		at = c.rest.Load()
	}
	if c.sched.periodic {
		_, _, end := c.sched.period(c.lastVisit)
		at = min(at, end)
	}
	return at, false
}

// schedule makes sure the due queue holds c's next due instant. Called
// under t.mu.
func (t *Tree) schedule(c *Controller) {
	if at, _ := t.wantVisit(c); at < c.dueAt {
		t.push(c, at)
	}
}

func (t *Tree) push(c *Controller, at int64) {
	c.dueAt = at
	heap.Push(&t.due, dueEntry{at, c})
}

// dueEntry is an instant a controller is due at. A controller has at most
// one live entry (at == its dueAt); later ones replace earlier ones
// lazily, when they come up.
type dueEntry struct {
	at int64
	c  *Controller
}

// dueQueue is a min-heap of due entries (container/heap).
type dueQueue []dueEntry

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueEntry)) }
func (q *dueQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = dueEntry{}
	*q = old[:len(old)-1]
	return e
}

// markBusy queues the controller for the next round, once per round. Off
// the hot path's fast path: Lane.touch calls it only when the flag is
// clear.
func (c *Controller) markBusy() {
	if !c.busy.CompareAndSwap(false, true) {
		return
	}
	t := c.tree
	t.busyMu.Lock()
	t.busy = append(t.busy, c)
	t.busyMu.Unlock()
}
