package flow_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// capStart is an arbitrary fixed instant; tests never read the wall clock.
var capStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// capStep is one call of a step table: at instant t, throttle quantity q,
// and expect the given reply.
type capStep struct {
	t         time.Time
	q         int64
	limited   bool
	remaining int64
	retry     time.Duration // -1 when allowed or impossible
	reset     time.Duration
}

func mustCap(t testing.TB, maxBurst, count int64, period time.Duration) *flow.Cap {
	t.Helper()
	c, err := flow.NewCap(maxBurst, count, period)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runCapSteps(t *testing.T, c *flow.Cap, key string, limit int64, steps []capStep) {
	t.Helper()
	if c.Limit() != limit {
		t.Errorf("Limit() = %d, want %d", c.Limit(), limit)
	}
	for i, s := range steps {
		got := c.Throttle(key, s.t, s.q)
		if got.Limited != s.limited || got.Remaining() != s.remaining || got.RetryAfter != s.retry || got.ResetAfter != s.reset {
			t.Errorf("step %d: Throttle(%q, t0+%v, %d) = limited %v remaining %d retry %v reset %v, want %v %d %v %v",
				i, key, s.t.Sub(capStart), s.q, got.Limited, got.Remaining(), got.RetryAfter, got.ResetAfter,
				s.limited, s.remaining, s.retry, s.reset)
		}
	}
}

// TestCapRedisCellVectors replays the step table of redis-cell's own test
// (redis-cell-impl/src/lib.rs, it_rate_limits): max_burst 4, 1 per second,
// one key, fixed instants.
func TestCapRedisCellVectors(t *testing.T) {
	var (
		t0 = capStart
		t1 = t0.Add(3000 * time.Millisecond)
		t2 = t0.Add(3100 * time.Millisecond)
		t3 = t0.Add(4000 * time.Millisecond)
		t4 = t0.Add(8000 * time.Millisecond)
		t5 = t0.Add(9500 * time.Millisecond)
		s  = time.Second
		ms = time.Millisecond
	)
	c := mustCap(t, 4, 1, time.Second)
	runCapSteps(t, c, "foo", 5, []capStep{
		// A request above the limit can never succeed.
		{t0, 6, true, 5, -1, 0},
		// Normal requests use up the burst.
		{t0, 1, false, 4, -1, 1 * s},
		{t0, 1, false, 3, -1, 2 * s},
		{t0, 1, false, 2, -1, 3 * s},
		{t0, 1, false, 1, -1, 4 * s},
		{t0, 1, false, 0, -1, 5 * s},
		{t0, 1, true, 0, 1 * s, 5 * s},
		// Time drips capacity back.
		{t1, 1, false, 2, -1, 3000 * ms},
		{t2, 1, false, 1, -1, 3900 * ms},
		{t3, 1, false, 1, -1, 4000 * ms},
		{t4, 1, false, 4, -1, 1000 * ms},
		{t5, 1, false, 4, -1, 1000 * ms},
		// Quantity 0 only peeks.
		{t5, 0, false, 4, -1, 1 * s},
		// A larger quantity takes more.
		{t5, 2, false, 2, -1, 3 * s},
		// and cannot exceed what is left.
		{t5, 5, true, 2, 3 * s, 3 * s},
	})
}

// TestCapReadmeExample checks the reply documented in redis-cell's README
// for "CL.THROTTLE user123 15 30 60" (0, 16, 15, -1, 2), which is also the
// call of seed 001 ("CL.THROTTLE laoqian:reply 15 30 60"). The seed's text
// says 15 and 14 for the second and third values; redis-cell's README and
// code give limit = max_burst+1 = 16 and remaining 15, which we follow.
func TestCapReadmeExample(t *testing.T) {
	c := mustCap(t, 15, 30, 60*time.Second)
	t0 := capStart
	steps := []capStep{{t0, 1, false, 15, -1, 2 * time.Second}}
	// The rest of the burst at the same instant: 16 in all.
	for i := int64(2); i <= 16; i++ {
		steps = append(steps, capStep{t0, 1, false, 16 - i, -1, time.Duration(i) * 2 * time.Second})
	}
	steps = append(steps,
		capStep{t0, 1, true, 0, 2 * time.Second, 32 * time.Second},
		capStep{t0.Add(2 * time.Second), 1, false, 0, -1, 32 * time.Second},
		capStep{t0.Add(33 * time.Second), 0, false, 15, -1, time.Second},
	)
	runCapSteps(t, c, "laoqian:reply", 16, steps)
}

// TestCapFullPrecision checks rates that whole seconds (redis-cell's reply
// unit) cannot express: 5000 per second is an emission interval of exactly
// 200µs.
func TestCapFullPrecision(t *testing.T) {
	const us = time.Microsecond
	t0 := capStart
	t.Run("burst", func(t *testing.T) {
		c := mustCap(t, 4999, 5000, time.Second)
		if c.Limit() != 5000 {
			t.Fatalf("Limit() = %d", c.Limit())
		}
		for i := range 5000 {
			if r := c.Throttle("k", t0, 1); r.Limited || r.Remaining() != int64(4999-i) {
				t.Fatalf("event %d: %+v", i, r)
			}
		}
		want := capReply{Limited: true, RetryAfter: 200 * us, ResetAfter: time.Second}
		if r := replyOf(c.Throttle("k", t0, 1)); r != want {
			t.Fatalf("event 5000: %+v, want %+v", r, want)
		}
		want = capReply{RetryAfter: -1, ResetAfter: time.Second}
		if r := replyOf(c.Throttle("k", t0.Add(200*us), 1)); r != want {
			t.Fatalf("after 200µs: %+v, want %+v", r, want)
		}
		if r := c.Throttle("k", t0.Add(200*us+399*us), 2); !r.Limited || r.RetryAfter != 1*us {
			t.Fatalf("2 more after 599µs: %+v, want limited, retry 1µs", r)
		}
	})
	t.Run("paced", func(t *testing.T) {
		// No burst: events every 100µs pass exactly every other one.
		c := mustCap(t, 0, 5000, time.Second)
		passed := 0
		for i := range 10000 {
			r := c.Throttle("k", t0.Add(time.Duration(i)*100*us), 1)
			if r.Limited != (i%2 == 1) {
				t.Fatalf("event %d at %v: %+v", i, time.Duration(i)*100*us, r)
			}
			if !r.Limited {
				passed++
			}
		}
		if passed != 5000 {
			t.Fatalf("passed %d in one second, want 5000", passed)
		}
	})
	t.Run("million per second", func(t *testing.T) {
		c := mustCap(t, 0, 1_000_000, time.Second)
		runCapSteps(t, c, "k", 1, []capStep{
			{t0, 1, false, 0, -1, us},
			{t0.Add(999), 1, true, 0, 1, us - 999},
			{t0.Add(us), 1, false, 0, -1, us},
		})
	})
}

func TestNewCapErrors(t *testing.T) {
	for _, tc := range []struct {
		maxBurst, count int64
		period          time.Duration
		field           string
	}{
		{-1, 1, time.Second, "maxBurst"},
		{0, 0, time.Second, "count"},
		{0, -3, time.Second, "count"},
		{0, 1, 0, "period"},
		{0, 1, -time.Second, "period"},
		{0, 2, time.Nanosecond, "count"},
		{1 << 40, 1, time.Hour, "maxBurst"},
		{1<<63 - 1, 1, time.Nanosecond, "maxBurst"},
	} {
		_, err := flow.NewCap(tc.maxBurst, tc.count, tc.period)
		var ce *flow.CapError
		if !errors.Is(err, flow.ErrInvalidCap) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("NewCap(%d, %d, %v) = %v, want a CapError on %s", tc.maxBurst, tc.count, tc.period, err, tc.field)
		}
	}
	if _, err := flow.NewCap(0, 1, time.Nanosecond); err != nil {
		t.Errorf("one per nanosecond: %v", err)
	}
}

// TestCapKeys checks that keys are independent, that []byte and string keys
// name the same state, and that an idle key answers like an absent one.
func TestCapKeys(t *testing.T) {
	c := mustCap(t, 2, 3, time.Hour) // 3 at once, one more every 20 minutes
	t0 := capStart
	for i := range 3 {
		if c.Throttle("alice", t0, 1).Limited {
			t.Fatalf("alice %d limited", i)
		}
	}
	if r := c.ThrottleBytes([]byte("alice"), t0, 1); !r.Limited || r.RetryAfter != 20*time.Minute {
		t.Fatalf("alice 4th: %+v", r)
	}
	if r := c.ThrottleBytes([]byte("bob"), t0, 1); r.Limited || r.Remaining() != 2 {
		t.Fatalf("bob: %+v", r)
	}
	fresh := c.Throttle("carol", t0.Add(time.Hour), 0)
	if idle := c.Throttle("alice", t0.Add(time.Hour), 0); idle != fresh {
		t.Fatalf("idle alice %+v, absent carol %+v", idle, fresh)
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (queries and refusals store nothing)", c.Len())
	}
}

func TestCapNoAllocs(t *testing.T) {
	c := mustCap(t, 1, 1, time.Second)
	key, now := []byte("user-42"), capStart
	long := []byte("0123456789abcdef0123456789abcdef") // stored out of line
	c.ThrottleBytes(key, now, 1)
	c.ThrottleBytes(long, now, 1)
	for name, f := range map[string]func(){
		"ThrottleBytes allowed": func() { now = now.Add(time.Second); c.ThrottleBytes(key, now, 1) },
		"ThrottleBytes limited": func() { c.ThrottleBytes(key, now, 5) },
		"ThrottleBytes absent":  func() { c.ThrottleBytes([]byte("nobody"), now, 0) },
		"Throttle allowed":      func() { now = now.Add(time.Second); c.Throttle("user-42", now, 1) },
		"ThrottleBytes long":    func() { now = now.Add(time.Second); c.ThrottleBytes(long, now, 1) },
		"Throttle long":         func() { now = now.Add(time.Second); c.Throttle(string(long), now, 1) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
}

func TestCapSweep(t *testing.T) {
	c := mustCap(t, 0, 1, time.Second) // a key's TAT is one second after its event
	t0 := capStart
	const n = 20000 // over 256 keys a shard, so that emptied shards are rebuilt
	for i := range n {
		c.Throttle(fmt.Sprint("k", i), t0.Add(time.Duration(i%2)*time.Millisecond), 1)
	}
	if got := c.Sweep(t0.Add(999*time.Millisecond), flow.CapShards); got != 0 || c.Len() != n {
		t.Fatalf("early sweep removed %d, Len %d", got, c.Len())
	}
	// Round-robin: one shard per call reaches every shard in CapShards calls.
	removed := 0
	for range flow.CapShards {
		removed += c.Sweep(t0.Add(time.Second), 1)
	}
	if removed != n/2 || c.Len() != n/2 {
		t.Fatalf("sweep at +1s removed %d, Len %d, want %d each", removed, c.Len(), n/2)
	}
	// Out-of-range shard counts are clamped.
	if got := c.Sweep(t0.Add(time.Hour), 0) + c.Sweep(t0.Add(time.Hour), 1000); got == 0 || got > n/2 {
		t.Fatalf("clamped sweeps removed %d", got)
	}
	c.Sweep(t0.Add(time.Hour), flow.CapShards)
	if c.Len() != 0 {
		t.Fatalf("Len after full sweep = %d", c.Len())
	}
	// Swept (and rebuilt) shards work as new.
	for i := range n {
		if r := c.Throttle(fmt.Sprint("k", i), t0.Add(time.Hour), 1); r.Limited {
			t.Fatalf("key %d after sweep: %+v", i, r)
		}
	}
	if c.Len() != n {
		t.Fatalf("Len = %d, want %d", c.Len(), n)
	}
}

// TestCapForgetChurn forgets keys without ever sweeping: the holes they
// leave are reclaimed as new keys arrive, so memory stays bounded.
func TestCapForgetChurn(t *testing.T) {
	c := mustCap(t, 0, 1, time.Hour)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 300_000 {
		key := fmt.Sprint("churn-", i)
		c.Restore(key, capStart.Add(time.Minute))
		if i%1000 != 0 {
			c.Forget(key)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.Len() != 300 {
		t.Fatalf("Len = %d, want 300", c.Len())
	}
	// 300k keys kept would take about 10 MB.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("heap grew by %d bytes for 300 keys", grown)
	}
	runtime.KeepAlive(c)
}

// TestCapRestore copies a cap's state through All and Restore, as a
// changelog would, and checks that the copy answers like the original and
// that now+ResetAfter is the state to record.
func TestCapRestore(t *testing.T) {
	a, b := mustCap(t, 2, 1, time.Minute), mustCap(t, 2, 1, time.Minute)
	t0 := capStart
	recorded := map[string]time.Time{}
	for i := range 300 {
		key := fmt.Sprint("user-", i%40)
		now := t0.Add(time.Duration(i) * time.Second)
		if r := a.Throttle(key, now, 1); !r.Limited {
			recorded[key] = now.Add(r.ResetAfter)
		}
	}
	n := 0
	for key, tat := range a.All() {
		if !tat.Equal(recorded[key]) {
			t.Fatalf("%s: All gives %v, now+ResetAfter gave %v", key, tat, recorded[key])
		}
		b.Restore(key, tat)
		n++
	}
	if n != len(recorded) || b.Len() != n {
		t.Fatalf("All yielded %d keys, recorded %d, restored Len %d", n, len(recorded), b.Len())
	}
	for i := range 40 {
		key, now := fmt.Sprint("user-", i), t0.Add(300*time.Second)
		if ra, rb := replyOf(a.Throttle(key, now, 1)), replyOf(b.Throttle(key, now, 1)); ra != rb {
			t.Fatalf("%s: original %+v, restored %+v", key, ra, rb)
		}
	}
	b.Restore("user-1", time.Time{})
	b.Forget("user-2")
	b.Forget("nobody")
	if b.Len() != n-2 {
		t.Fatalf("Len after forgetting 2 = %d, want %d", b.Len(), n-2)
	}
	for range a.All() {
		break // stopping early must release the shard
	}
	a.Throttle("user-0", t0, 0)
}

// TestCapSweepFuncLookup: SweepFunc names exactly the keys it removes (short
// and long ones), and Lookup reads the TAT a Throttle left.
func TestCapSweepFuncLookup(t *testing.T) {
	c := mustCap(t, 0, 1, time.Second)
	if c.Interval() != time.Second {
		t.Fatalf("Interval = %v", c.Interval())
	}
	t0 := capStart
	const n = 3000
	key := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf("a-long-key-of-more-than-23-bytes-%d", i)
		}
		return fmt.Sprint("k", i)
	}
	for i := range n {
		c.Throttle(key(i), t0.Add(time.Duration(i%2)*time.Millisecond), 1)
	}
	if tat, ok := c.Lookup([]byte(key(1))); !ok || !tat.Equal(t0.Add(time.Second+time.Millisecond)) {
		t.Fatalf("Lookup(%s) = %v, %v", key(1), tat, ok)
	}
	if _, ok := c.Lookup([]byte("absent")); ok {
		t.Fatal("Lookup of an absent key found it")
	}
	seen := map[string]bool{}
	removed := c.SweepFunc(t0.Add(time.Second), flow.CapShards, func(k []byte, tat time.Time) {
		if tat.After(t0.Add(time.Second)) {
			t.Fatalf("key %q swept with TAT %v", k, tat)
		}
		if seen[string(k)] {
			t.Fatalf("key %q named twice", k)
		}
		seen[string(k)] = true
	})
	if removed != n/2 || len(seen) != n/2 || c.Len() != n/2 {
		t.Fatalf("removed %d, named %d, Len %d; want %d each", removed, len(seen), c.Len(), n/2)
	}
	for i := range n {
		_, held := c.Lookup([]byte(key(i)))
		if want := i%2 == 0; seen[key(i)] != want || held == want {
			t.Fatalf("key %d: named %v, still held %v", i, seen[key(i)], held)
		}
	}
}
