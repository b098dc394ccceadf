package flow

import "time"

// changed notes that the lane's counters changed (once until Changed lists
// it). Off the hot path's fast path: Lane.touch calls it only when the
// lane is clean.
func (s *Source) changed(l *Lane) {
	l.dirty = true
	s.dirty = append(s.dirty, l)
}

// Changed appends to dst the report, at now, of every open lane whose
// counters changed since Changed last listed it, and returns the extended
// slice: what the source must publish. A listed lane is pending until
// Published (its reports are durable: the lane may be released) or
// Unpublished (they were lost: the next Changed lists the lane again). It
// costs O(lanes that changed).
//
// A consumer calls it at each commit, writes the reports in the
// transaction, then calls Published if the transaction committed, or
// Unpublished if it aborted (or, as the consumer does, reopens the source
// from its committed state).
func (s *Source) Changed(now time.Time, dst []Report) []Report {
	n := now.UnixNano()
	for _, l := range s.dirty {
		l.dirty = false
		if l.closed {
			continue
		}
		dst = append(dst, l.report(n))
		if !l.pending {
			l.pending = true
			s.pending = append(s.pending, l)
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return dst
}

// Published says that the reports Changed listed so far are durable.
func (s *Source) Published() {
	for _, l := range s.pending {
		l.pending = false
	}
	clear(s.pending)
	s.pending = s.pending[:0]
}

// Unpublished says that the reports Changed listed since the last
// Published were lost: their lanes count as changed again.
func (s *Source) Unpublished() {
	for _, l := range s.pending {
		l.pending = false
		if !l.dirty && !l.closed {
			s.changed(l)
		}
	}
	clear(s.pending)
	s.pending = s.pending[:0]
}

// Release closes the lanes that had no event for idleFor (as of now) and
// whose counters are published (listed by Changed, then Published, or
// never changed since the lane opened), and returns how many it closed. A
// lane that is the parent of an open lane stays. A released lane's
// counters live on where they were published; the budget's next event on
// the source opens the lane again through the restore callback, which
// must then return them. A controller left without lanes is dropped
// DropAfter later. It costs O(open lanes); call it from the source's
// goroutine every few seconds, e.g. after a commit.
func (s *Source) Release(now time.Time, idleFor time.Duration) int {
	n := now.UnixNano()
	s.now = n
	t := s.t
	locked := false
	released := 0
	// Backwards: a lane removed takes the last one's place, which was
	// already looked at.
	for i := len(s.list) - 1; i >= 0; i-- {
		if i >= len(s.list) {
			continue
		}
		for l := s.list[i]; l != nil && s.idle(l, n, int64(idleFor)); {
			if !locked {
				t.mu.Lock()
				locked = true
			}
			p := l.parent
			s.drop(l, n)
			released++
			l = p // may be idle now that it has one child less
		}
	}
	if locked {
		t.mu.Unlock()
	}
	return released
}

func (s *Source) idle(l *Lane, n, idleFor int64) bool {
	return !l.dirty && !l.pending && l.kids == 0 && l.idx >= 0 && n-l.last >= idleFor
}
