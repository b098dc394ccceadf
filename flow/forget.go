package flow

import "time"

// Forgetting the counters of ended periods.
//
// A period budget is paced on what its sources count in the current
// period (addReported): a source's counters of an ended period weigh in
// nothing. So a source's owner may forget them, once the source has no
// lane of the budget open, and a node may forget its peer of them: the
// memory and the exchange's entries of a budget then follow the (budget,
// source) pairs that count in the current period, not every pair that
// ever counted. A lane that opens again starts from zero, and its Total
// counts from that opening.
//
// Forgotten are only the counters of a period that ended at least
// StaleAfter ago (by the node's clock): nodes whose clocks differ by less
// than that still count them in the period they report. Window budgets
// (their whole window is one period), reward budgets (their all-time
// totals feed the conversion model) and delay budgets are never
// forgotten.

// Counted is a budget and the period of the counters a source holds of
// it (Report.Period).
type Counted struct {
	Budget string
	Period int64
}

// forgets reports whether a budget's counters of an ended period may be
// forgotten.
func (b *Budget) forgets() bool { return b.Period > 0 && !b.Rewards && !b.Delay }

// ended reports whether period ended at least margin before t.
func (s *schedule) ended(period, t, margin int64) bool {
	if !s.periodic {
		return false
	}
	idx, _, _ := s.period(t - margin)
	return period < idx
}

// Forgettable appends to dst the budgets of counted whose counters the
// source's owner may forget at now (see above): period budgets of the tree
// whose counted period ended at least StaleAfter before now, and of which
// the source has no lane open. It costs O(len(counted)) lookups; call it
// from the source's goroutine (as Release), every few seconds at most.
func (s *Source) Forgettable(now time.Time, counted []Counted, dst []string) []string {
	n, margin := now.UnixNano(), int64(s.t.cfg.staleAfter)
	t := s.t
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, c := range counted {
		if s.lanes[c.Budget] != nil {
			continue
		}
		x := t.defs.get(c.Budget)
		if x == nil || !x.b.forgets() {
			continue
		}
		sch := newSchedule(x.b)
		if sch.ended(c.Period, n, margin) {
			dst = append(dst, c.Budget)
		}
	}
	return dst
}

// forgetPeers drops the peers the last sync at t did not list (the
// exchange no longer holds their source's counters of the budget) whose
// report is of a period the budget forgets: their owner forgot them.
// Called under c.mu.
func (c *Controller) forgetPeers(t int64) {
	if !c.b.forgets() {
		return
	}
	margin := int64(c.cfg.staleAfter)
	kept := c.peerList[:0]
	for _, p := range c.peerList {
		if p.seen != t && c.sched.ended(p.rep.Period, t, margin) {
			delete(c.srcs, p.source)
			continue
		}
		kept = append(kept, p)
	}
	clear(c.peerList[len(kept):])
	c.peerList = kept
}
