package flow_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// limitSubject adapts a limiter to the shared contract suite: take reports
// whether n units pass at now and, if not, when the same request would
// pass (the zero time when never).
type limitSubject struct {
	name  string
	burst int64   // units admitted at one instant from a fresh state
	rate  float64 // long-run units per second
	new   func(t testing.TB) (take func(now time.Time, n int64) (bool, time.Time))
}

func limitSubjects() []limitSubject {
	return []limitSubject{
		{"Cap", 5, 5, func(t testing.TB) func(time.Time, int64) (bool, time.Time) {
			c := mustCap(t, 4, 5, time.Second)
			return func(now time.Time, n int64) (bool, time.Time) {
				r := c.Throttle("k", now, n)
				switch {
				case !r.Limited:
					return true, time.Time{}
				case r.RetryAfter < 0:
					return false, time.Time{}
				}
				return false, now.Add(r.RetryAfter)
			}
		}},
		{"WindowLimit", 5, 5, func(t testing.TB) func(time.Time, int64) (bool, time.Time) {
			return mustWindow(t, 5, time.Second).Reserve
		}},
	}
}

func mustWindow(t testing.TB, limit int64, period time.Duration) *flow.WindowLimit {
	t.Helper()
	w, err := flow.NewWindowLimit(limit, period)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCapWindowContract runs one suite over every limiter that answers "come
// back at": Cap (for one key) and WindowLimit.
func TestCapWindowContract(t *testing.T) {
	for _, s := range limitSubjects() {
		t.Run(s.name, func(t *testing.T) {
			t.Run("burst", func(t *testing.T) {
				take := s.new(t)
				n := int64(0)
				for ok := true; ok; n++ {
					ok, _ = take(capStart, 1)
				}
				if n-1 != s.burst {
					t.Fatalf("admitted %d at one instant, want %d", n-1, s.burst)
				}
			})
			t.Run("retryAt is exact", func(t *testing.T) {
				take := s.new(t)
				now := capStart
				for i := range 50 {
					ok, at := take(now, 2)
					if ok {
						continue
					}
					if !at.After(now) {
						t.Fatalf("call %d: refused at %v with retryAt %v", i, now, at)
					}
					if ok, _ := take(at.Add(-1), 2); ok {
						t.Fatalf("call %d: admitted 1ns before retryAt", i)
					}
					if ok, _ := take(at, 2); !ok {
						t.Fatalf("call %d: refused at retryAt", i)
					}
					now = at
				}
			})
			t.Run("over the limit", func(t *testing.T) {
				take := s.new(t)
				if ok, at := take(capStart, s.burst+1); ok || !at.IsZero() {
					t.Fatalf("burst+1: ok=%v retryAt=%v, want refused for ever", ok, at)
				}
				if ok, at := take(capStart, 0); !ok || !at.IsZero() {
					t.Fatalf("0 units: ok=%v retryAt=%v", ok, at)
				}
				if ok, _ := take(capStart, s.burst); !ok {
					t.Fatal("refusals and empty requests consumed something")
				}
			})
			t.Run("long run", func(t *testing.T) {
				const horizon = 100 * time.Second
				bound := float64(s.burst) + s.rate*horizon.Seconds()
				// Impatient random traffic never exceeds the rate.
				rng := rand.New(rand.NewPCG(3, 4))
				take, now, admitted := s.new(t), capStart, int64(0)
				for now.Before(capStart.Add(horizon)) {
					n := rng.Int64N(3)
					if ok, _ := take(now, n); ok {
						admitted += n
					}
					now = now.Add(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
				}
				if float64(admitted) > bound {
					t.Errorf("random traffic: admitted %d in %v, bound %v", admitted, horizon, bound)
				}
				// A caller that always comes back at retryAt gets the full rate.
				take, now, admitted = s.new(t), capStart, 0
				for now.Before(capStart.Add(horizon)) {
					ok, at := take(now, 1)
					if ok {
						admitted++
						continue
					}
					now = at
				}
				if float64(admitted) > bound || float64(admitted) < s.rate*horizon.Seconds() {
					t.Errorf("patient caller: admitted %d in %v, want within [%v, %v]", admitted, horizon, s.rate*horizon.Seconds(), bound)
				}
			})
		})
	}
}

func TestWindowLimitSteps(t *testing.T) {
	var (
		t0   = capStart
		t1   = t0.Add(1 * time.Second)
		t2   = t0.Add(2 * time.Second)
		t3   = t0.Add(10*time.Second - 1)
		t4   = t0.Add(10 * time.Second)
		t5   = t0.Add(25 * time.Second) // idle: the next window opens here
		t6   = t0.Add(26 * time.Second)
		zero time.Time
	)
	w := mustWindow(t, 3, 10*time.Second)
	for i, s := range []struct {
		t         time.Time
		n         int64
		ok        bool
		retryAt   time.Time
		remaining int64 // after the call
	}{
		{t0, 1, true, zero, 2},
		{t1, 2, true, zero, 0},
		{t2, 1, false, t4, 0},
		{t3, 1, false, t4, 0},
		{t4, 1, true, zero, 2},
		{t4, 3, false, t0.Add(20 * time.Second), 2},
		{t5, 3, true, zero, 0},
		{t6, 1, false, t0.Add(35 * time.Second), 0},
		{t6, 4, false, zero, 0}, // more than a window holds: never
		{t6, 0, true, zero, 0},
	} {
		ok, at := w.Reserve(s.t, s.n)
		if ok != s.ok || !at.Equal(s.retryAt) || w.Remaining(s.t) != s.remaining {
			t.Errorf("step %d: Reserve(t0+%v, %d) = %v, t0+%v, remaining %d; want %v, t0+%v, %d",
				i, s.t.Sub(t0), s.n, ok, at.Sub(t0), w.Remaining(s.t), s.ok, s.retryAt.Sub(t0), s.remaining)
		}
	}
	if w.Allow(t6) || !w.Allow(t0.Add(35*time.Second)) {
		t.Error("Allow disagrees with Reserve")
	}
	if w.Limit() != 3 || w.Period() != 10*time.Second {
		t.Errorf("Limit, Period = %d, %v", w.Limit(), w.Period())
	}
}

func TestWindowConcurrencyLimitErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"window limit 0", second(flow.NewWindowLimit(0, time.Second)), "limit"},
		{"window period 0", second(flow.NewWindowLimit(1, 0)), "period"},
		{"window period 200y", second(flow.NewWindowLimit(1, 200*365*24*time.Hour)), "period"},
		{"concurrency -1", second(flow.NewConcurrencyLimit(-1)), "limit"},
	} {
		var le *flow.LimitError
		if !errors.Is(tc.err, flow.ErrInvalidLimit) || !errors.As(tc.err, &le) || le.Field != tc.field {
			t.Errorf("%s: %v, want a LimitError on %s", tc.name, tc.err, tc.field)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestWindowLimitConcurrent shares one window among goroutines: exactly the
// limit passes per window.
func TestWindowLimitConcurrent(t *testing.T) {
	w := mustWindow(t, 1000, time.Minute)
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 500 {
				// Instants need not be ordered across goroutines.
				if w.Allow(capStart.Add(time.Duration(i) * time.Millisecond)) {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if passed.Load() != 1000 {
		t.Fatalf("passed %d, want 1000", passed.Load())
	}
}

func mustConcurrency(t testing.TB, n int) *flow.ConcurrencyLimit {
	t.Helper()
	l, err := flow.NewConcurrencyLimit(n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// limitDeadline bounds how long a test waits for another goroutine; it is a
// safety net against hangs, never part of an assertion about speed.
const limitDeadline = 30 * time.Second

func TestConcurrencyLimitTry(t *testing.T) {
	l := mustConcurrency(t, 2)
	if !l.TryAcquire() || !l.TryAcquire() || l.TryAcquire() {
		t.Fatal("want exactly 2 slots")
	}
	if l.InFlight() != 2 || l.Limit() != 2 {
		t.Fatalf("InFlight %d, Limit %d", l.InFlight(), l.Limit())
	}
	l.Release()
	if l.InFlight() != 1 || !l.TryAcquire() {
		t.Fatal("a released slot is not free")
	}
	l.Release()
	l.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("Release without Acquire did not panic")
		}
	}()
	l.Release()
}

func TestConcurrencyLimitAcquire(t *testing.T) {
	l := mustConcurrency(t, 1)
	ctx := context.Background()
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Acquire(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Acquire on a full limit returned %v", err)
	default:
	}
	l.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limitDeadline):
		t.Fatal("blocked Acquire not served after Release")
	}
	if l.InFlight() != 1 {
		t.Fatalf("InFlight %d, want 1", l.InFlight())
	}

	// A blocked Acquire gives up when its context ends, taking nothing.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- l.Acquire(cctx) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	case <-time.After(limitDeadline):
		t.Fatal("Acquire ignored its cancelled context")
	}
	l.Release()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}
	// A context already done fails even with a free slot.
	if err := l.Acquire(cctx); !errors.Is(err, context.Canceled) || l.InFlight() != 0 {
		t.Fatalf("done context: %v, InFlight %d", err, l.InFlight())
	}
}

// TestConcurrencyLimitShared checks that many goroutines never exceed the
// limit together and that every one is eventually served.
func TestConcurrencyLimitShared(t *testing.T) {
	const limit, workers, rounds = 3, 16, 200
	l := mustConcurrency(t, limit)
	var inFlight, peak, served atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), limitDeadline)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				if err := l.Acquire(ctx); err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				served.Add(1)
				inFlight.Add(-1)
				l.Release()
			}
		})
	}
	wg.Wait()
	if peak.Load() > limit || served.Load() != workers*rounds || l.InFlight() != 0 {
		t.Fatalf("peak %d (limit %d), served %d of %d, InFlight %d",
			peak.Load(), limit, served.Load(), workers*rounds, l.InFlight())
	}
}

// benchGoroutines runs b.N calls of op split over 1, 2, 4 and 8 goroutines;
// op(w) returns the operation of goroutine w.
func benchGoroutines(b *testing.B, op func(w int) func()) {
	for _, g := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			b.ReportAllocs()
			fs := make([]func(), g)
			for w := range fs {
				fs[w] = op(w)
			}
			var wg sync.WaitGroup
			b.ResetTimer()
			for w, f := range fs {
				n := b.N / g
				if w < b.N%g {
					n++
				}
				wg.Go(func() {
					for range n {
						f()
					}
				})
			}
			wg.Wait()
		})
	}
}

func BenchmarkWindowLimit(b *testing.B) {
	w := mustWindow(b, 1000, time.Millisecond)
	benchGoroutines(b, func(int) func() {
		now := capStart // each goroutine has its own clock, 1µs a call
		return func() {
			now = now.Add(time.Microsecond)
			w.Reserve(now, 1)
		}
	})
}

func BenchmarkConcurrencyLimit(b *testing.B) {
	b.Run("TryAcquire", func(b *testing.B) {
		l := mustConcurrency(b, 4)
		benchGoroutines(b, func(int) func() {
			return func() {
				if l.TryAcquire() {
					l.Release()
				}
			}
		})
	})
	b.Run("Acquire", func(b *testing.B) {
		l := mustConcurrency(b, 4)
		ctx := context.Background()
		benchGoroutines(b, func(int) func() {
			return func() {
				if l.Acquire(ctx) == nil {
					l.Release()
				}
			}
		})
	})
}
