package flow_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// capFunnel is a reference model written the way seed 001 describes a
// funnel: water (in nanoseconds of emission) drains one nanosecond per
// nanosecond, each unit pours in one emission interval, and the funnel holds
// (maxBurst+1) intervals. It only handles non-decreasing instants.
type capFunnel struct {
	interval, capacity int64
	level              int64
	last               int64
}

// capReply is a CapResult with its remaining quantity, comparable with ==.
type capReply struct {
	Limited                bool
	Remaining              int64
	RetryAfter, ResetAfter time.Duration
}

func replyOf(r flow.CapResult) capReply {
	return capReply{r.Limited, r.Remaining(), r.RetryAfter, r.ResetAfter}
}

func (f *capFunnel) pour(now, q int64) capReply {
	f.level = max(0, f.level-(now-f.last))
	f.last = now
	limit := f.capacity / f.interval
	r := capReply{RetryAfter: -1}
	switch {
	case q > limit:
		r.Limited = true
	case f.level+q*f.interval > f.capacity:
		r.Limited = true
		r.RetryAfter = time.Duration(f.level + q*f.interval - f.capacity)
	default:
		f.level += q * f.interval
	}
	r.ResetAfter = time.Duration(f.level)
	r.Remaining = (f.capacity - f.level) / f.interval
	return r
}

// TestCapMatchesFunnel drives a Cap and the funnel model with the same
// random (seeded) traffic and compares every reply.
func TestCapMatchesFunnel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []struct {
		burst, count int64
		period       time.Duration
	}{{0, 1, time.Second}, {4, 1, time.Second}, {15, 30, time.Minute}, {9, 5000, time.Second}, {2, 3, 7 * time.Millisecond}} {
		c := mustCap(t, p.burst, p.count, p.period)
		interval := int64(p.period) / p.count
		f := &capFunnel{interval: interval, capacity: interval * (p.burst + 1), last: capStart.UnixNano()}
		now := capStart
		for i := range 20000 {
			now = now.Add(time.Duration(rng.Int64N(2 * interval)))
			q := rng.Int64N(p.burst + 3)
			got, want := replyOf(c.Throttle("k", now, q)), f.pour(now.UnixNano(), q)
			if got != want {
				t.Fatalf("%+v call %d (q=%d): got %+v, funnel %+v", p, i, q, got, want)
			}
		}
	}
}

// capModel is the plainest reading of GCRA: a map from key to TAT, and the
// redis-cell formulas.
type capModel struct {
	interval, tolerance, limit int64
	tat                        map[string]int64
}

func (m *capModel) throttle(key string, now, q int64) capReply {
	tat := max(m.tat[key], now)
	r := capReply{RetryAfter: -1, ResetAfter: time.Duration(tat - now)}
	q = max(q, 0)
	if q > m.limit {
		r.Limited = true
	} else if allowAt := tat + q*m.interval - m.tolerance; now < allowAt {
		r.Limited = true
		r.RetryAfter = time.Duration(allowAt - now)
	} else {
		r.ResetAfter = time.Duration(tat + q*m.interval - now)
		if q > 0 {
			m.tat[key] = tat + q*m.interval
		}
	}
	r.Remaining = max(0, (m.tolerance-int64(r.ResetAfter))/m.interval)
	return r
}

// TestCapModel runs random operations (throttle, restore, forget, sweep)
// on many keys against capModel, so that the Cap's tables grow, shrink and
// remove keys from the middle of probe runs.
func TestCapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := mustCap(t, 2, 1, time.Second)
	m := &capModel{interval: int64(time.Second), tolerance: 3 * int64(time.Second), limit: 3, tat: map[string]int64{}}
	now := capStart.UnixNano()
	keys := 3000
	for op := range 200_000 {
		if op%50_000 == 0 {
			keys = []int{3000, 20000, 50, 8000}[op/50_000] // grow, then shrink the key space
		}
		key := fmt.Sprintf("key-%d-%s", rng.IntN(keys), string(make([]byte, rng.IntN(3)*70))) // some keys over 127 bytes
		switch x := rng.IntN(1000); {
		case x < 2:
			removed := c.Sweep(time.Unix(0, now), flow.CapShards)
			want := 0
			for k, tat := range m.tat {
				if tat <= now {
					delete(m.tat, k)
					want++
				}
			}
			if removed != want || c.Len() != len(m.tat) {
				t.Fatalf("op %d: Sweep removed %d, Len %d; model removed %d, holds %d", op, removed, c.Len(), want, len(m.tat))
			}
		case x < 10:
			c.Forget(key)
			delete(m.tat, key)
		case x < 20:
			tat := now + rng.Int64N(int64(4*time.Second)) - int64(time.Second)
			c.Restore(key, time.Unix(0, tat))
			m.tat[key] = tat
		default:
			q := rng.Int64N(4)
			var got capReply
			switch x % 3 {
			case 0:
				got = replyOf(c.Throttle(key, time.Unix(0, now), q))
			case 1:
				got = replyOf(c.ThrottleBytes([]byte(key), time.Unix(0, now), q))
			default:
				got = replyOf(c.ThrottleNanos([]byte(key), now, q))
			}
			if want := m.throttle(key, now, q); got != want {
				t.Fatalf("op %d: Throttle(%.12q, %d) = %+v, model %+v", op, key, q, got, want)
			}
		}
		now += rng.Int64N(int64(time.Millisecond))
	}
	all := map[string]int64{}
	for k, tat := range c.All() {
		all[k] = tat.UnixNano()
	}
	if len(all) != len(m.tat) || c.Len() != len(m.tat) {
		t.Fatalf("All yields %d keys, Len %d, model %d", len(all), c.Len(), len(m.tat))
	}
	for k, tat := range m.tat {
		if all[k] != tat {
			t.Fatalf("%.12q: All gives %d, model %d", k, all[k], tat)
		}
	}
}

// TestCapKeyBytes checks that keys of every length, around the longest key
// a Cap stores inline and beyond, are told apart by every byte and by their
// length, zero bytes included: each is a key of its own.
func TestCapKeyBytes(t *testing.T) {
	var keys []string
	for n := range 41 {
		for _, fill := range []byte{0, 0xff, 'a'} {
			base := make([]byte, n)
			for i := range base {
				base[i] = fill
			}
			keys = append(keys, string(base))
			for i := range n { // the same, but for byte i
				k := append([]byte(nil), base...)
				k[i] ^= 1
				keys = append(keys, string(k))
			}
		}
	}
	distinct := map[string]bool{}
	for _, k := range keys {
		distinct[k] = true
	}
	c := mustCap(t, 0, 1, time.Hour)
	t0 := capStart
	for k := range distinct {
		if r := c.Throttle(k, t0, 1); r.Limited {
			t.Fatalf("%q: first call limited", k)
		}
	}
	if c.Len() != len(distinct) {
		t.Fatalf("Len = %d, want %d", c.Len(), len(distinct))
	}
	forgotten := 0
	for k := range distinct {
		if len(k)%2 == 0 {
			c.Forget(k)
			forgotten++
		}
	}
	for k, tat := range c.All() {
		if !distinct[k] || len(k)%2 == 0 || !tat.Equal(t0.Add(time.Hour)) {
			t.Fatalf("All yields %q at %v", k, tat)
		}
	}
	for k := range distinct {
		r := c.ThrottleBytes([]byte(k), t0, 1)
		if want := len(k)%2 == 1; r.Limited != want {
			t.Fatalf("%q (length %d): limited %v, want %v", k, len(k), r.Limited, want)
		}
	}
	if c.Len() != len(distinct) {
		t.Fatalf("Len = %d after forgetting %d and throttling again, want %d", c.Len(), forgotten, len(distinct))
	}
}
