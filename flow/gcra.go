package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"time"
)

// CapShards is the number of shards a Cap splits its keys into: the unit of
// work of Cap.Sweep, and of the pause when a Cap grows.
const CapShards = 64

// maxTolerance bounds a cap's burst window (maxBurst+1 emission intervals),
// about 146 years, so that instant + tolerance never overflows an int64 of
// Unix nanoseconds.
const maxTolerance = 1 << 62

// ErrInvalidCap is wrapped by every error about a cap's parameters.
var ErrInvalidCap = errors.New("invalid cap")

// CapError names the parameter of NewCap that is wrong.
type CapError struct {
	Field  string // "maxBurst", "count" or "period"
	Reason string
}

func (e *CapError) Error() string { return fmt.Sprintf("cap: %s: %s", e.Field, e.Reason) }

// Unwrap returns ErrInvalidCap.
func (e *CapError) Unwrap() error { return ErrInvalidCap }

// CapResult is the answer of Cap.Throttle, field for field the reply of
// redis-cell's CL.THROTTLE, with durations at full precision instead of
// whole seconds.
type CapResult struct {
	// Limited is true when the quantity was refused (nothing was consumed).
	Limited bool
	// Limit is the most a key can take at once: maxBurst+1.
	Limit int64
	// Remaining is how much the key could still take at this instant.
	Remaining int64
	// RetryAfter is how long until the same request would be allowed. It is
	// -1 when the request was allowed, and also when it can never be (a
	// quantity above Limit).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full Limit. The
	// key's state after the call is its theoretical arrival time, now +
	// ResetAfter: that is what a changelog records and Cap.Restore takes.
	ResetAfter time.Duration
}

// Cap is a per-key frequency cap: every key may take count per period on
// average and up to maxBurst+1 at once ("a user sees a campaign at most 3
// times an hour"). It implements the generic cell rate algorithm (GCRA) with
// the semantics of redis-cell's CL.THROTTLE key max_burst count period
// [quantity], with durations in nanoseconds rather than seconds.
//
// The state of a key is a single timestamp, its theoretical arrival time
// (TAT). A key whose TAT is not after now is equivalent to an absent key, so
// idle keys can be forgotten: call Sweep periodically to keep memory
// bounded. Keys are copied into the Cap, which holds no pointer per key: a
// million keys cost the garbage collector nothing to scan. A Cap holds up to
// about a billion keys (16M a shard); it panics beyond.
//
// A Cap is not safe for concurrent use. Like a map, it belongs to one
// goroutine, the single writer of a partition's state in the intended use,
// which also calls Sweep (for instance when its ticker fires); the fast
// path therefore takes no lock. Use one Cap per partition, or guard a shared
// Cap with a mutex.
//
// The zero value is not usable: create a Cap with NewCap.
type Cap struct {
	interval  int64 // emission interval: period/count, in nanoseconds
	tolerance int64 // interval * limit: how far ahead of now a TAT may run
	limit     int64 // maxBurst + 1

	seed      maphash.Seed
	nextSweep int
	shards    [CapShards]capShard
}

// NewCap returns a cap allowing count per period with bursts of up to
// maxBurst+1, like CL.THROTTLE key maxBurst count period. The emission
// interval period/count is kept in nanoseconds (rounded down when count does
// not divide period), so rates of thousands or millions per second are
// exact.
//
// The error wraps ErrInvalidCap and is a *CapError when count or period is
// not positive, maxBurst is negative, period/count is under a nanosecond, or
// the burst window (maxBurst+1)×period/count exceeds about 146 years.
func NewCap(maxBurst int64, count int64, period time.Duration) (*Cap, error) {
	switch {
	case maxBurst < 0:
		return nil, &CapError{"maxBurst", fmt.Sprintf("must be >= 0, got %d", maxBurst)}
	case count <= 0:
		return nil, &CapError{"count", fmt.Sprintf("must be > 0, got %d", count)}
	case period <= 0:
		return nil, &CapError{"period", fmt.Sprintf("must be > 0, got %v", period)}
	}
	interval := int64(period) / count
	if interval == 0 {
		return nil, &CapError{"count", fmt.Sprintf("%d per %v is more than one per nanosecond", count, period)}
	}
	if maxBurst >= maxTolerance/interval {
		return nil, &CapError{"maxBurst", fmt.Sprintf("%d bursts of %v exceed the longest supported window", maxBurst+1, time.Duration(interval))}
	}
	return &Cap{
		interval:  interval,
		tolerance: interval * (maxBurst + 1),
		limit:     maxBurst + 1,
		seed:      maphash.MakeSeed(),
	}, nil
}

// Throttle applies quantity to key at instant now and reports the outcome,
// like CL.THROTTLE. A quantity of 0 (or less) only queries the key. A
// quantity above Limit is always limited. A limited request consumes
// nothing.
//
// now must lie between the years 1678 and 2262 (the range of
// time.Time.UnixNano). Instants need not be monotonic across calls.
func (c *Cap) Throttle(key string, now time.Time, quantity int64) CapResult {
	h := maphash.String(c.seed, key)
	return capThrottle(c, &c.shards[h%CapShards], key, uint32(h>>32), now.UnixNano(), quantity)
}

// ThrottleBytes is Throttle for a key held in a byte slice, such as the key
// of a record just read. It does not retain key, and it does not allocate
// except to grow the Cap for a new key.
func (c *Cap) ThrottleBytes(key []byte, now time.Time, quantity int64) CapResult {
	h := maphash.Bytes(c.seed, key)
	return capThrottle(c, &c.shards[h%CapShards], key, uint32(h>>32), now.UnixNano(), quantity)
}

func capThrottle[K string | []byte](c *Cap, s *capShard, key K, hash uint32, now, quantity int64) CapResult {
	slot, e := capFind(s, key, hash)
	tat := now
	if e != nil && e.tat > now {
		tat = e.tat
	}
	r, next, store := c.decide(tat, now, quantity)
	switch {
	case store && e != nil:
		e.tat = next
	case store:
		capInsert(s, slot, key, hash, next)
	}
	return r
}

// decide is GCRA proper. tat is the key's theoretical arrival time, already
// raised to now when the key is absent or idle. It returns the new TAT and
// whether it must be stored (an allowed, non-zero quantity).
func (c *Cap) decide(tat, now, quantity int64) (r CapResult, newTAT int64, store bool) {
	r.Limit = c.limit
	r.RetryAfter = -1
	reset := tat - now
	quantity = max(quantity, 0)
	if quantity > c.limit {
		r.Limited = true // can never fit: RetryAfter stays -1
	} else if next := tat + quantity*c.interval; now < next-c.tolerance {
		r.Limited = true
		r.RetryAfter = time.Duration(next - c.tolerance - now)
	} else {
		reset = next - now
		newTAT, store = next, quantity > 0
	}
	r.ResetAfter = time.Duration(reset)
	if left := c.tolerance - reset; left > 0 {
		r.Remaining = left / c.interval
	}
	return r, newTAT, store
}

// Limit returns maxBurst+1, the most a key can take at once.
func (c *Cap) Limit() int64 { return c.limit }

// Len returns the number of keys held, including idle keys that the next
// Sweep of their shard will forget.
func (c *Cap) Len() int {
	n := 0
	for i := range c.shards {
		n += c.shards[i].live
	}
	return n
}

// Sweep forgets the keys whose TAT is not after now (they are equivalent to
// absent keys) in the next maxShards shards, visited round-robin, and
// returns how many keys it removed. maxShards is clamped to [1, CapShards],
// so Sweep(now, CapShards) sweeps every key. Sweeping a shard takes time in
// proportion to its keys and gives back the memory of the removed ones.
func (c *Cap) Sweep(now time.Time, maxShards int) (removed int) {
	t := now.UnixNano()
	for range min(max(maxShards, 1), CapShards) {
		removed += c.shards[c.nextSweep].sweep(t)
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
	h := maphash.String(c.seed, key)
	s := &c.shards[h%CapShards]
	if slot, e := capFind(s, key, uint32(h>>32)); e != nil {
		e.tat = tat.UnixNano()
	} else {
		capInsert(s, slot, key, uint32(h>>32), tat.UnixNano())
	}
}

// Forget removes key, which is then back to its full limit.
func (c *Cap) Forget(key string) {
	h := maphash.String(c.seed, key)
	s := &c.shards[h%CapShards]
	if slot, e := capFind(s, key, uint32(h>>32)); e != nil {
		s.remove(slot)
	}
}

// All returns an iterator over every key held and its TAT, for writing the
// state to a changelog. Keys whose TAT is not after the current instant
// are idle and need not be kept. The loop body must not modify c.
func (c *Cap) All() iter.Seq2[string, time.Time] {
	return func(yield func(string, time.Time) bool) {
		for i := range c.shards {
			s := &c.shards[i]
			for j := range s.entries {
				e := &s.entries[j]
				if e.off != capGone && !yield(string(s.key(e)), time.Unix(0, e.tat)) {
					return
				}
			}
		}
	}
}

// capShard holds some of a Cap's keys in the layout of a compact hash
// table: entries in insertion order, each with the key's TAT, hash and
// place in keys, where the keys are stored back to back, each preceded by
// its length as a uvarint; and index, an open-addressing table (linear
// probing, at most 3/4 full) of 4-byte references to entries. A lookup
// reads one index slot (rarely more), one entry and one key. None of it
// holds pointers.
type capShard struct {
	index   []uint32 // 0 = empty, else 8-bit hash tag << 24 | entry number + 1
	entries []capEntry
	keys    []byte
	live    int // entries in the index; the others are forgotten (off == capGone)
}

type capEntry struct {
	tat  int64  // Unix nanoseconds
	hash uint32 // the key's hash; its low bits pick the home slot in index
	off  uint32 // offset of the key in keys, or capGone
}

const (
	capGone       = 1<<32 - 1 // capEntry.off of a forgotten entry
	capMaxEntries = 1<<24 - 1 // entry numbers fit in 24 bits of an index slot
	capMinIndex   = 8
)

// capFind returns the entry of key, or nil and the empty index slot where
// it would be inserted.
func capFind[K string | []byte](s *capShard, key K, hash uint32) (slot uint32, e *capEntry) {
	if len(s.index) == 0 {
		return 0, nil
	}
	mask, tag := uint32(len(s.index)-1), hash>>24
	for slot = hash & mask; ; slot = (slot + 1) & mask {
		x := s.index[slot]
		if x == 0 {
			return slot, nil
		}
		if x>>24 == tag {
			e = &s.entries[x&capMaxEntries-1]
			if e.hash == hash && string(s.key(e)) == string(key) {
				return slot, e
			}
		}
	}
}

// capInsert stores a key that capFind did not find; slot is the index slot
// capFind returned.
func capInsert[K string | []byte](s *capShard, slot uint32, key K, hash uint32, tat int64) {
	if len(s.entries) >= 2*s.live+capMinIndex {
		// Mostly holes left by Forget: compact before growing.
		s.sweep(math.MinInt64)
		slot, _ = capFind(s, key, hash)
	}
	if len(s.entries) >= capMaxEntries || len(s.keys) >= capGone-binary.MaxVarintLen64-len(key) {
		panic("flow: Cap shard full (16M keys or 4 GiB of keys)")
	}
	if (s.live+1)*4 > len(s.index)*3 {
		s.reindex(max(capMinIndex, 2*len(s.index)))
		slot, _ = capFind(s, key, hash)
	}
	s.entries = append(s.entries, capEntry{tat: tat, hash: hash, off: uint32(len(s.keys))})
	s.keys = binary.AppendUvarint(s.keys, uint64(len(key)))
	s.keys = append(s.keys, key...)
	s.index[slot] = hash>>24<<24 | uint32(len(s.entries))
	s.live++
}

// key returns the bytes of e's key.
func (s *capShard) key(e *capEntry) []byte {
	b := s.keys[e.off:]
	n, w := binary.Uvarint(b)
	return b[w : w+int(n)]
}

// reindex rebuilds the index with n slots (a power of two) from the live
// entries.
func (s *capShard) reindex(n int) {
	if len(s.index) == n {
		clear(s.index)
	} else {
		s.index = make([]uint32, n)
	}
	mask := uint32(n - 1)
	for j, e := range s.entries {
		if e.off == capGone {
			continue
		}
		slot := e.hash & mask
		for s.index[slot] != 0 {
			slot = (slot + 1) & mask
		}
		s.index[slot] = e.hash>>24<<24 | uint32(j+1)
	}
}

// remove forgets the entry of index slot slot: the entry stays as a hole
// until the next sweep, and later slots of the probe run move back so that
// every key stays reachable from its home slot.
func (s *capShard) remove(slot uint32) {
	s.entries[s.index[slot]&capMaxEntries-1].off = capGone
	s.live--
	mask := uint32(len(s.index) - 1)
	for j := slot; ; {
		j = (j + 1) & mask
		x := s.index[j]
		if x == 0 {
			break
		}
		// x stays if its home slot lies after the hole, up to j.
		if home := s.entries[x&capMaxEntries-1].hash & mask; (j-home)&mask < (j-slot)&mask {
			continue
		}
		s.index[slot] = x
		slot = j
	}
	s.index[slot] = 0
}

// sweep drops the entries whose TAT is not after now and the forgotten
// ones, compacting entries and keys in place, then rebuilds the index.
func (s *capShard) sweep(now int64) (removed int) {
	if !s.hasGarbage(now) {
		return 0
	}
	n, kn := 0, 0 // entries and key bytes kept so far
	for _, e := range s.entries {
		if e.off == capGone {
			continue
		}
		if e.tat <= now {
			removed++
			continue
		}
		b := s.keys[e.off:]
		size, w := binary.Uvarint(b)
		kn += copy(s.keys[kn:], b[:w+int(size)]) // moves back: copy allows overlap
		e.off = uint32(kn - w - int(size))
		s.entries[n] = e
		n++
	}
	s.entries, s.keys, s.live = s.entries[:n], s.keys[:kn], n
	if cap(s.entries) > 4*n+capMinIndex { // give memory back
		s.entries = append([]capEntry(nil), s.entries...)
		s.keys = append([]byte(nil), s.keys...)
	}
	size := capMinIndex
	for size*3 < n*4*2 { // at most 3/8 full: room to grow before the next doubling
		size *= 2
	}
	if n == 0 {
		s.index = nil
	} else if len(s.index) < size || len(s.index) > 4*size {
		s.reindex(size)
	} else {
		s.reindex(len(s.index))
	}
	return removed
}

func (s *capShard) hasGarbage(now int64) bool {
	if s.live < len(s.entries) {
		return true
	}
	for _, e := range s.entries {
		if e.tat <= now {
			return true
		}
	}
	return false
}
