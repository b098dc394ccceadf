package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math/bits"
	"math/rand/v2"
	"time"
	"unsafe"
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
	interval  int64   // emission interval: period/count, in nanoseconds
	tolerance int64   // interval * limit: how far ahead of now a TAT may run
	limit     int64   // maxBurst + 1
	inverse   float64 // 1 / interval

	hash      capHash
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
		inverse:   1 / float64(interval),
		hash:      newCapHash(),
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
	return c.ThrottleBytes(capBytes(key), now, quantity)
}

// ThrottleBytes is Throttle for a key held in a byte slice, such as the key
// of a record just read. It does not retain key, and it does not allocate
// except to grow the Cap for a new key.
//
// It is one function, with the lookup of a short key and GCRA written in
// line, so that the CPU can run far enough ahead to start on the next
// call's cache miss while this one's is still in flight.
func (c *Cap) ThrottleBytes(key []byte, now time.Time, quantity int64) CapResult {
	var (
		t  = now.UnixNano()
		s  *capShard
		h  uint64
		sl *capSlot // the key's slot, nil when it is absent
		i  int      // else the empty slot where it would go
	)
	if n := len(key); n <= capInline {
		// capPack, written in line.
		var w1, w2, w3 uint64
		if n >= 8 {
			w1, w3 = capLoad64(key, 0), uint64(n+1)
			if n < 16 {
				w2 = capLoad64(key, n-8)
			} else {
				w2, w3 = capLoad64(key, 8), capLoad64(key, n-8)&^0xff|w3
			}
		} else {
			w1, w3 = capPackSmall(key), uint64(n+1)
		}
		h = c.hash.short(w1, w2, w3)
		s = &c.shards[h%CapShards]
		if len(s.lines) != 0 {
			// Compare both slots of the home line without a branch that
			// their contents decide: a branch mispredicted on memory still
			// in flight would stall until it arrives, where a predictable
			// one lets the CPU go on meanwhile.
			home := s.home(h)
			line := &s.lines[home]
			d0 := (line[0][1] ^ w1) | (line[0][2] ^ w2) | (line[0][3] ^ w3)
			d1 := (line[1][1] ^ w1) | (line[1][2] ^ w2) | (line[1][3] ^ w3)
			if min(d0, d1) == 0 {
				sl = &line[(d0|-d0)>>63] // the second slot unless the first
			} else {
				sl, i = s.findShort(home*capLineSlots, w1, w2, w3)
			}
		}
	} else {
		h = maphash.Bytes(c.hash.seed, key)
		s = &c.shards[h%CapShards]
		sl, i = s.findLong(h, key)
	}

	// GCRA proper. tat is the key's theoretical arrival time, raised to now
	// when the key is absent or idle.
	tat := t
	if sl != nil {
		tat = max(tat, int64(sl[0]))
	}
	// The fields of the result are kept in scalars, which stay in
	// registers: a CapResult built in place would live in memory.
	limited, remaining, retry, reset := false, int64(0), int64(-1), tat-t
	quantity = max(quantity, 0)
	if quantity > c.limit {
		limited = true // can never fit: retry stays -1
	} else if next := tat + quantity*c.interval; t < next-c.tolerance {
		limited = true
		retry = next - c.tolerance - t
	} else {
		reset = next - t
		if quantity > 0 {
			if sl != nil {
				sl[0] = uint64(next)
			} else {
				c.insert(s, i, key, h, next)
			}
		}
	}
	if left := c.tolerance - reset; left > 0 {
		// left / interval by a multiplication (a 64-bit division costs
		// tens of cycles); the quotient is at most limit, far below 2^52,
		// so the float product is off by at most one, corrected here.
		remaining = int64(float64(left) * c.inverse)
		if remaining*c.interval > left {
			remaining--
		} else if (remaining+1)*c.interval <= left {
			remaining++
		}
	}
	return CapResult{limited, c.limit, remaining, time.Duration(retry), time.Duration(reset)}
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
		removed += c.shards[c.nextSweep].sweep(&c.hash, t)
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
		c.insert(s, i, capBytes(key), h, tat.UnixNano())
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

// capShard holds some of a Cap's keys in an open-addressing hash table
// (linear probing, tombstone-free) of 32-byte slots, two to a 64-byte cache
// line. A slot holds a key's TAT and, for a key of up to capInline bytes,
// the key itself; a longer key is kept in keys, and its slot holds its hash,
// place and length. A key's home is the first slot of a line picked by its
// hash: a key of up to capInline bytes is usually found, its TAT read and
// written, in that one cache line, the only memory a lookup touches beyond
// the key it is given. None of it holds pointers.
//
// The slots of a table over 32 KiB start on a page boundary (the
// allocator's large objects do), so its lines are cache lines; smaller
// tables are in cache anyway.
type capShard struct {
	lines   []capLine // never full; nil when empty
	keys    []byte    // long keys, back to back
	live    int       // keys held: the slots in use
	garbage int       // bytes of keys no slot refers to any more
}

// capSlot is one key: word 0 is its TAT (Unix nanoseconds). The low byte of
// word 3, the tag, is 0 in an empty slot (all zero), n+1 for a key of n <=
// capInline bytes, or capLong. Words 1 to 3 of a key of n bytes hold, with
// the key's bytes read as little-endian words (capPack):
//
//   - n < 8: the key, zero-padded; 0; the tag.
//   - 8 <= n < 16: bytes 0 to 7; bytes n-8 to n-1; the tag.
//   - 16 <= n <= 23: bytes 0 to 7; 8 to 15; n-8 to n-1 with its first byte,
//     which is also in word 2, replaced by the tag.
//   - a longer key: its hash; its offset in capShard.keys; its length << 8
//     | the tag.
//
// A lookup of a short key compares the three words with the same encoding
// of the key it seeks: no tag to match first, no other memory to read.
type capSlot [4]uint64

// capLine is a cache line of slots. Slot j of a shard is slot j%capLineSlots
// of line j/capLineSlots.
type capLine [capLineSlots]capSlot

// size returns the number of slots.
func (s *capShard) size() int { return len(s.lines) * capLineSlots }

// at returns slot j.
func (s *capShard) at(j int) *capSlot { return &s.lines[j/capLineSlots][j%capLineSlots] }

const (
	capInline    = 23   // the longest key a slot holds
	capLong      = 0xff // the tag of a slot that refers to a key in capShard.keys
	capLineSlots = 2    // slots in a 64-byte cache line
	capMinSlots  = 8
	capMaxKeys   = 1<<24 - 1 // a shard's keys: about a billion in a Cap
	// A table grows past 5/8 full, to 1/2 full: fuller, fewer keys would be
	// in their home line (about 3/4 of them at 3/4 full, 5/6 at 5/8).
	capLoadNum, capLoadDen = 5, 8
)

// capPack returns words 1 to 3 of the slot of a key of up to capInline
// bytes, loading the key a word at a time (overlapping loads, no copy).
func capPack(key []byte) (w1, w2, w3 uint64) {
	n := len(key)
	if n < 8 {
		return capPackSmall(key), 0, uint64(n + 1)
	}
	w1, w3 = capLoad64(key, 0), uint64(n+1)
	if n < 16 {
		return w1, capLoad64(key, n-8), w3
	}
	return w1, capLoad64(key, 8), capLoad64(key, n-8)&^0xff | w3
}

// capPackSmall returns the bytes of a key shorter than 8 bytes, zero-padded.
func capPackSmall(key []byte) uint64 {
	switch n := len(key); {
	case n >= 4:
		return capLoad32(key, 0) | capLoad32(key, n-4)<<(8*(n-4))
	case n > 0:
		// Bytes 0, n/2 and n-1 are all of them.
		return uint64(key[0]) | uint64(key[n/2])<<(8*(n/2)) | uint64(key[n-1])<<(8*(n-1))
	}
	return 0
}

// capLoad64 returns the 8 bytes of key at i, little-endian.
func capLoad64(key []byte, i int) uint64 { return binary.LittleEndian.Uint64(key[i:]) }

// capLoad32 returns the 4 bytes of key at i, little-endian.
func capLoad32(key []byte, i int) uint64 { return uint64(binary.LittleEndian.Uint32(key[i:])) }

// key returns the bytes of the key of slot sl, in buf if it is short.
func (s *capShard) key(sl *capSlot, buf *[capInline + 1]byte) []byte {
	tag := int(byte(sl[3]))
	if tag == capLong {
		return s.keys[sl[2] : sl[2]+sl[3]>>8]
	}
	n := tag - 1
	le := binary.LittleEndian
	switch {
	case n >= 16:
		le.PutUint64(buf[n-8:], sl[3]) // its first byte comes from word 2
		le.PutUint64(buf[0:], sl[1])
		le.PutUint64(buf[8:], sl[2])
	case n >= 8:
		le.PutUint64(buf[n-8:], sl[2])
		le.PutUint64(buf[0:], sl[1])
	default:
		le.PutUint64(buf[0:], sl[1])
	}
	return buf[:n]
}

// capHash hashes keys. The hash of a key picks its shard (low 6 bits) and
// its home line in the shard (high 32 bits). A key of up to capInline bytes
// is hashed from the words of its slot (capPack), which the lookup has at
// hand anyway and which hash again without unpacking, by two rounds of a
// 64×64→128-bit multiply folded to 64 bits, under random keys; a longer key
// by hash/maphash.
type capHash struct {
	seed maphash.Seed
	k    [4]uint64
}

func newCapHash() capHash {
	return capHash{seed: maphash.MakeSeed(), k: [4]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64()}}
}

// short returns the hash of the short key whose slot words are w1, w2, w3.
func (k *capHash) short(w1, w2, w3 uint64) uint64 {
	hi, lo := bits.Mul64(w1^k.k[0], w2^k.k[1])
	hi, lo = bits.Mul64(hi^lo^k.k[2], w3^k.k[3])
	return hi ^ lo
}

// slot returns the hash of the key of slot sl.
func (k *capHash) slot(sl *capSlot) uint64 {
	if byte(sl[3]) == capLong {
		return sl[1]
	}
	return k.short(sl[1], sl[2], sl[3])
}

// locate finds the shard of key and its slot sl there, or nil; i is the
// number of the slot, or of the empty slot where the key would be inserted.
// It returns the key's hash.
func (c *Cap) locate(key []byte) (s *capShard, h uint64, sl *capSlot, i int) {
	if len(key) > capInline {
		h = maphash.Bytes(c.hash.seed, key)
		s = &c.shards[h%CapShards]
		sl, i = s.findLong(h, key)
		return s, h, sl, i
	}
	w1, w2, w3 := capPack(key)
	h = c.hash.short(w1, w2, w3)
	s = &c.shards[h%CapShards]
	if len(s.lines) == 0 {
		return s, h, nil, 0
	}
	sl, i = s.findShort(s.home(h)*capLineSlots, w1, w2, w3)
	return s, h, sl, i
}

// capBytes returns the bytes of key without copying them. A Cap only reads
// keys, and copies those it keeps.
func capBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

// home returns the home line of a key with hash h.
func (s *capShard) home(h uint64) int {
	return int((h >> 32) * uint64(len(s.lines)) >> 32)
}

// findShort returns the slot of the short key whose slot words are w1, w2,
// w3, or nil, probing from slot i; and the number of that slot, or of the
// empty slot where the key would be inserted.
func (s *capShard) findShort(i int, w1, w2, w3 uint64) (*capSlot, int) {
	for {
		sl := s.at(i)
		if sl[1] == w1 && sl[2] == w2 && sl[3] == w3 {
			return sl, i
		}
		if sl[3] == 0 {
			return nil, i
		}
		if i++; i == s.size() {
			i = 0
		}
	}
}

// findLong is findShort for a key longer than capInline with hash h.
func (s *capShard) findLong(h uint64, key []byte) (*capSlot, int) {
	if len(s.lines) == 0 {
		return nil, 0
	}
	w3 := uint64(len(key))<<8 | capLong
	for i := s.home(h) * capLineSlots; ; {
		sl := s.at(i)
		if sl[1] == h && sl[3] == w3 && string(s.keys[sl[2]:sl[2]+uint64(len(key))]) == string(key) {
			return sl, i
		}
		if sl[3] == 0 {
			return nil, i
		}
		if i++; i == s.size() {
			i = 0
		}
	}
}

// insert stores in s a key that locate did not find; i is the slot and h
// the hash locate returned.
func (c *Cap) insert(s *capShard, i int, key []byte, h uint64, tat int64) {
	if (s.live+1)*capLoadDen > s.size()*capLoadNum {
		if s.live >= capMaxKeys {
			panic("flow: Cap shard full (16M keys)")
		}
		s.resize(&c.hash, capLinesFor(s.live+1))
		_, _, _, i = c.locate(key)
	}
	sl := s.at(i)
	sl[0] = uint64(tat)
	if len(key) <= capInline {
		sl[1], sl[2], sl[3] = capPack(key)
	} else {
		sl[1], sl[2], sl[3] = h, uint64(len(s.keys)), uint64(len(key))<<8|capLong
		s.keys = append(s.keys, key...)
	}
	s.live++
}

// capLinesFor returns the table size in lines for n keys: 1/2 full.
func capLinesFor(n int) int {
	return max(capMinSlots, 2*n+capLineSlots) / capLineSlots
}

// resize moves the keys into a new table of n lines (nil when n is 0),
// compacting keys on the way.
func (s *capShard) resize(k *capHash, n int) {
	old, oldKeys, garbage := s.lines, s.keys, s.garbage
	s.lines, s.keys, s.garbage = nil, nil, 0
	if n == 0 {
		return
	}
	s.lines = make([]capLine, n)
	if len(oldKeys) > garbage {
		s.keys = make([]byte, 0, len(oldKeys)-garbage)
	}
	for j := range old {
		for sl := range old[j] {
			sl := &old[j][sl]
			if sl[3] == 0 {
				continue
			}
			if byte(sl[3]) == capLong {
				off := len(s.keys)
				s.keys = append(s.keys, oldKeys[sl[2]:sl[2]+sl[3]>>8]...)
				sl[2] = uint64(off)
			}
			i := s.home(k.slot(sl)) * capLineSlots
			for s.at(i)[3] != 0 {
				if i++; i == s.size() {
					i = 0
				}
			}
			*s.at(i) = *sl
		}
	}
}

// remove empties slot i, and moves back the later slots of its probe run so
// that every key stays reachable from its home slot.
func (s *capShard) remove(k *capHash, i int) {
	if sl := s.at(i); byte(sl[3]) == capLong {
		s.garbage += int(sl[3] >> 8)
	}
	s.live--
	n := s.size()
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		sl := s.at(j)
		if sl[3] == 0 {
			break
		}
		// sl stays if its home lies after the hole, up to j.
		home := s.home(k.slot(sl)) * capLineSlots
		dHome, dHole := j-home, j-i
		if dHome < 0 {
			dHome += n
		}
		if dHole < 0 {
			dHole += n
		}
		if dHome < dHole {
			continue
		}
		*s.at(i) = *sl
		i = j
	}
	*s.at(i) = capSlot{}
}

// compactKeys drops the bytes of forgotten long keys once they are most of
// keys.
func (s *capShard) compactKeys() {
	if s.garbage < 4096 || 2*s.garbage < len(s.keys) {
		return
	}
	old := s.keys
	s.keys = make([]byte, 0, len(old)-s.garbage)
	for j := range s.size() {
		if sl := s.at(j); byte(sl[3]) == capLong {
			off := len(s.keys)
			s.keys = append(s.keys, old[sl[2]:sl[2]+sl[3]>>8]...)
			sl[2] = uint64(off)
		}
	}
	s.garbage = 0
}

// sweep forgets the keys whose TAT is not after now, and gives memory back
// when the table is mostly empty.
func (s *capShard) sweep(k *capHash, now int64) (removed int) {
	n := s.size()
	for j := range n {
		if sl := s.at(j); sl[3] != 0 && int64(sl[0]) <= now {
			removed++
		}
	}
	if removed == 0 {
		return 0
	}
	if size := capLinesFor(s.live - removed); s.live == removed || 2*size < len(s.lines) {
		// Copy the keys that stay into a smaller table.
		for j := range n {
			if sl := s.at(j); sl[3] != 0 && int64(sl[0]) <= now {
				if byte(sl[3]) == capLong {
					s.garbage += int(sl[3] >> 8)
				}
				sl[3] = 0
			}
		}
		s.live -= removed
		if s.live == 0 {
			size = 0
		}
		s.resize(k, size)
		return removed
	}
	// Remove in place, starting after an empty slot so that no probe run
	// wraps past the start: a removal moves back only slots not yet visited.
	start := 0
	for s.at(start)[3] != 0 {
		start++
	}
	for j := 1; j < n; j++ {
		i := start + j
		if i >= n {
			i -= n
		}
		for sl := s.at(i); sl[3] != 0 && int64(sl[0]) <= now; {
			s.remove(k, i) // may move a later key into slot i
		}
	}
	s.compactKeys()
	return removed
}

// Interval returns the emission interval period/count (in whole
// nanoseconds): the time one unit of quantity adds to a key's TAT.
func (c *Cap) Interval() time.Duration { return time.Duration(c.interval) }

// Lookup returns the TAT held for key, and false when the key is absent.
// A TAT not after the current instant is idle: the key behaves as absent.
// Like ThrottleBytes it does not retain key.
func (c *Cap) Lookup(key []byte) (tat time.Time, ok bool) {
	if _, _, sl, _ := c.locate(key); sl != nil {
		return time.Unix(0, int64(sl[0])), true
	}
	return time.Time{}, false
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
