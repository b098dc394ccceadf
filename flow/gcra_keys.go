package flow

import (
	"iter"
	"time"
)

// Sweep forgets the keys whose TAT is not after now (they are equivalent to
// absent keys) in the next maxShards shards, visited round-robin, and
// returns how many keys it removed. maxShards is clamped to [1, CapShards],
// so Sweep(now, CapShards) sweeps every key. Sweeping a shard takes time in
// proportion to its keys and gives back the memory of the removed ones.
func (c *Cap) Sweep(now time.Time, maxShards int) (removed int) {
	t := now.UnixNano()
	for range min(max(maxShards, 1), CapShards) {
		removed += c.shards[c.nextSweep].sweep(&c.hash, t)
		c.nextSweep = (c.nextSweep + 1) % CapShards
	}
	return removed
}

// SweepFunc is Sweep that also calls forgotten with every key it removes
// and its TAT, before removing it (for writing tombstones to a changelog).
// forgotten must not keep the slice, and must not modify c.
func (c *Cap) SweepFunc(now time.Time, maxShards int, forgotten func(key []byte, tat time.Time)) (removed int) {
	t := now.UnixNano()
	for range min(max(maxShards, 1), CapShards) {
		s := &c.shards[c.nextSweep]
		if forgotten != nil && s.live > 0 {
			var buf [capInline + 1]byte
			for j := range s.size() {
				if sl := s.at(j); sl[3] != 0 && int64(sl[0]) <= t {
					forgotten(s.key(sl, &buf), time.Unix(0, int64(sl[0])))
				}
			}
		}
		removed += s.sweep(&c.hash, t)
		c.nextSweep = (c.nextSweep + 1) % CapShards
	}
	return removed
}

// Restore sets the TAT of key, as read back from a changelog (see
// CapResult.ResetAfter). A TAT in the past is harmless: the key behaves as
// absent and Sweep forgets it. A zero tat is the same as Forget(key).
func (c *Cap) Restore(key string, tat time.Time) {
	if tat.IsZero() {
		c.Forget(key)
		return
	}
	if s, h, sl, i := c.locate(capBytes(key)); sl != nil {
		sl[0] = uint64(tat.UnixNano())
	} else {
		c.insert(s, i, capBytes(key), h)[0] = uint64(tat.UnixNano())
	}
}

// Forget removes key, which is then back to its full limit.
func (c *Cap) Forget(key string) {
	if s, _, sl, i := c.locate(capBytes(key)); sl != nil {
		s.remove(&c.hash, i)
		s.compactKeys()
	}
}

// All returns an iterator over every key held and its TAT, for writing the
// state to a changelog. Keys whose TAT is not after the current instant
// are idle and need not be kept. The loop body must not modify c.
func (c *Cap) All() iter.Seq2[string, time.Time] {
	return func(yield func(string, time.Time) bool) {
		for i := range c.shards {
			s := &c.shards[i]
			for j := range s.size() {
				sl := s.at(j)
				if sl[3] == 0 {
					continue
				}
				var buf [capInline + 1]byte
				if !yield(string(s.key(sl, &buf)), time.Unix(0, int64(sl[0]))) {
					return
				}
			}
		}
	}
}
