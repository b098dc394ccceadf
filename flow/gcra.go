package flow

import (
	"errors"
	"fmt"
	"math/bits"
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

// CapResult is the answer of Cap.Throttle: field for field the reply of
// redis-cell's CL.THROTTLE, with durations at full precision instead of
// whole seconds, but its limit, which is the Cap's (Cap.Limit), and its
// remaining quantity, which follows from ResetAfter and is computed only
// when asked for (Remaining). It has four words so that it is returned in
// registers, never built in memory.
type CapResult struct {
	// Limited is true when the quantity was refused (nothing was consumed).
	Limited bool
	// RetryAfter is how long until the same request would be allowed. It is
	// -1 when the request was allowed, and also when it can never be (a
	// quantity above Cap.Limit).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full limit. The
	// key's state after the call is its theoretical arrival time, now +
	// ResetAfter: that is what a changelog records and Cap.Restore takes.
	ResetAfter time.Duration

	cap *Cap // for Remaining
}

// Remaining is how much the key could still take at the instant of the
// call, after it: at most Cap.Limit, 0 for the zero CapResult. It is
// floor((tolerance - ResetAfter) / interval), where tolerance is Limit
// emission intervals: the burst still unused at that instant. It is a
// method, not a field, so that a call whose caller does not read it (an
// admitted event, in the common case) does not pay for the division, which
// would wait for the key's state to arrive from memory.
func (r CapResult) Remaining() int64 {
	if r.cap == nil {
		return 0
	}
	return r.cap.div.quo(max(r.cap.tolerance-int64(r.ResetAfter), 0))
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
// million keys cost the garbage collector nothing to scan. A key longer
// than 23 bytes is told apart from others by a 128-bit hash under random
// seeds (two keys are confused with a probability of 2^-128), so that a
// lookup reads one cache line whatever the key's length. A Cap holds up to
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
	interval  int64      // emission interval: period/count, in nanoseconds
	tolerance int64      // interval * limit: how far ahead of now a TAT may run
	limit     int64      // maxBurst + 1
	div       capDivisor // divides by interval

	hash      capHash
	idle      capSlot // the state of an absent key, for ThrottleBytes
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
		div:       newCapDivisor(uint64(interval)),
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
// The common case, a short key found in its home line, is written in line
// and kept short: every instruction that waits for the key's slot to arrive
// from memory holds the CPU back from starting on the next call's cache
// miss meanwhile.
func (c *Cap) ThrottleBytes(key []byte, now time.Time, quantity int64) CapResult {
	return c.ThrottleNanos(key, now.UnixNano(), quantity)
}

// ThrottleNanos is ThrottleBytes at an instant given in Unix nanoseconds.
func (c *Cap) ThrottleNanos(key []byte, t int64, quantity int64) CapResult {
	var sl *capSlot // the key's slot
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
		h := c.hash.short(w1, w2, w3)
		if lines := c.shards[h%CapShards].lines; len(lines) != 0 {
			// Compare both slots of the home line without a branch that
			// their contents decide: a branch mispredicted on memory still
			// in flight would stall until it arrives, where a predictable
			// one lets the CPU go on meanwhile.
			line := &lines[capHome(h, len(lines))]
			d0 := (line[0][1] ^ w1) | (line[0][2] ^ w2) | (line[0][3] ^ w3)
			d1 := (line[1][1] ^ w1) | (line[1][2] ^ w2) | (line[1][3] ^ w3)
			if min(d0, d1) == 0 {
				sl = &line[(d0|-d0)>>63] // the second slot unless the first
			}
		}
	}
	if sl == nil {
		sl = c.slot(key, t, quantity)
	}

	// GCRA proper, relative to t. reset is how far the key's TAT is ahead
	// of t, 0 when the key is idle.
	if uint64(quantity-1) >= uint64(c.limit) {
		return c.gcraOdd(sl, t, quantity)
	}
	reset := max(int64(sl[0])-t, 0)
	next := reset + quantity*c.interval
	if next > c.tolerance {
		return CapResult{true, time.Duration(next - c.tolerance), time.Duration(reset), c}
	}
	sl[0] = uint64(t + next)
	return CapResult{false, -1, time.Duration(next), c}
}

// gcraOdd is the GCRA of ThrottleBytes for a quantity that takes no part
// of the burst: a query (0 or less), or one above Limit, which can never
// fit and retries never (-1).
func (c *Cap) gcraOdd(sl *capSlot, t, quantity int64) CapResult {
	reset := max(int64(sl[0])-t, 0)
	limited, retry := quantity > 0, int64(-1)
	if quantity <= 0 && reset > c.tolerance {
		limited, retry = true, reset-c.tolerance
	}
	return CapResult{limited, time.Duration(retry), time.Duration(reset), c}
}

// slot returns the slot of a key that ThrottleBytes did not find in its
// home line: a long key, a key further along its probe run, or an absent
// key. An absent key is a key whose TAT is t: when quantity will consume
// (it is positive and at most Limit, so it always fits), slot inserts the
// key with that TAT; otherwise it returns c.idle, set to t.
func (c *Cap) slot(key []byte, t, quantity int64) *capSlot {
	s, h, sl, i := c.locate(key)
	if sl == nil {
		sl = &c.idle
		if quantity > 0 && quantity <= c.limit {
			sl = c.insert(s, i, key, h)
		}
		sl[0] = uint64(t)
	}
	return sl
}

// capDivisor divides by a constant d by a multiplication and shifts (a
// 64-bit division costs tens of cycles): the method of Granlund and
// Montgomery, "Division by invariant integers using multiplication" (1994),
// for dividends below 2^63.
type capDivisor struct {
	m uint64 // ceil(2^(63+l) / d), below 2^64
	l uint   // ceil(log2 d)
}

func newCapDivisor(d uint64) capDivisor {
	l := uint(bits.Len64(d - 1))
	// 2^(63+l) as a 128-bit number hi:lo; hi < d, as Div64 requires.
	hi, lo := uint64(1)<<63>>(63-l)>>1, uint64(1)<<63<<l
	m, rem := bits.Div64(hi, lo, d)
	if rem != 0 {
		m++
	}
	return capDivisor{m, l}
}

// quo returns n/d for 0 <= n < 2^63: the product n*m is below 2^127, and
// m*d - 2^(63+l) lies in [0, 2^l), so the quotient shifted is exact.
func (v capDivisor) quo(n int64) int64 {
	hi, lo := bits.Mul64(uint64(n), v.m)
	return int64((hi<<1 | lo>>63) >> (v.l & 63))
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
