package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrInvalidLimit is wrapped by every error about the parameters of a
// WindowLimit or a ConcurrencyLimit.
var ErrInvalidLimit = errors.New("invalid limit")

// LimitError names the limit and the parameter that is wrong.
type LimitError struct {
	Limit  string // "window" or "concurrency"
	Field  string // "limit" or "period"
	Reason string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s limit: %s: %s", e.Limit, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidLimit.
func (e *LimitError) Unwrap() error { return ErrInvalidLimit }

// WindowLimit admits at most limit units per window of period, like tower's
// RateLimit: a window opens at the first request after the previous one
// closed and lasts period. Once its limit is spent, requests are refused
// until the window closes, and the refusal says when that is, so that the
// caller can wait (pause fetching) instead of dropping anything.
//
// A WindowLimit is safe for concurrent use by many goroutines; they share
// one limit. The zero value is not usable: create one with NewWindowLimit.
type WindowLimit struct {
	limit  int64
	period int64 // nanoseconds

	mu   sync.Mutex
	end  int64 // Unix nanoseconds at which the current window closes
	used int64 // units admitted in the current window
}

// NewWindowLimit returns a limit of limit units per window of period.
//
// The error wraps ErrInvalidLimit and is a *LimitError when limit or period
// is not positive, or period exceeds about 146 years.
func NewWindowLimit(limit int64, period time.Duration) (*WindowLimit, error) {
	switch {
	case limit <= 0:
		return nil, &LimitError{"window", "limit", fmt.Sprintf("must be > 0, got %d", limit)}
	case period <= 0:
		return nil, &LimitError{"window", "period", fmt.Sprintf("must be > 0, got %v", period)}
	case period > maxTolerance:
		return nil, &LimitError{"window", "period", fmt.Sprintf("%v is longer than supported", period)}
	}
	return &WindowLimit{limit: limit, period: int64(period), end: -1 << 63}, nil
}

// Allow is shorthand for Reserve(now, 1) when the caller only needs to know
// whether one unit is admitted.
func (w *WindowLimit) Allow(now time.Time) bool {
	ok, _ := w.Reserve(now, 1)
	return ok
}

// Reserve admits n units at instant now if they fit in the current window
// (opening a new window if the last one has closed). If they do not fit,
// nothing is consumed and retryAt is when the window closes: the same
// request made at retryAt is admitted, unless others take the new window
// first. n above the limit never fits: ok is false and retryAt is the zero
// time. n <= 0 is always admitted and consumes nothing. retryAt is the zero
// time whenever ok is true.
//
// now must lie between the years 1678 and 2262; instants from several
// goroutines need not be ordered.
func (w *WindowLimit) Reserve(now time.Time, n int64) (ok bool, retryAt time.Time) {
	if n <= 0 {
		return true, time.Time{}
	}
	if n > w.limit {
		return false, time.Time{}
	}
	t := now.UnixNano()
	w.mu.Lock()
	if t >= w.end {
		w.end, w.used = t+w.period, 0
	}
	if w.used+n <= w.limit {
		w.used += n
		w.mu.Unlock()
		return true, time.Time{}
	}
	wait := w.end - t
	w.mu.Unlock()
	return false, now.Add(time.Duration(wait))
}

// Remaining returns how many units a request at instant now could still
// take.
func (w *WindowLimit) Remaining(now time.Time) int64 {
	t := now.UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if t >= w.end {
		return w.limit
	}
	return w.limit - w.used
}

// Limit returns the most units a window admits.
func (w *WindowLimit) Limit() int64 { return w.limit }

// Period returns the length of a window.
func (w *WindowLimit) Period() time.Duration { return time.Duration(w.period) }

// ConcurrencyLimit keeps at most limit operations in flight: each Acquire
// or successful TryAcquire must be followed by one Release.
//
// A ConcurrencyLimit is safe for concurrent use by many goroutines. Blocked
// Acquire calls are served in about the order they started. The zero value
// is not usable: create one with NewConcurrencyLimit.
type ConcurrencyLimit struct {
	slots chan struct{} // one element per operation in flight
}

// NewConcurrencyLimit returns a limit of limit operations in flight.
//
// The error wraps ErrInvalidLimit and is a *LimitError when limit is not
// positive.
func NewConcurrencyLimit(limit int) (*ConcurrencyLimit, error) {
	if limit <= 0 {
		return nil, &LimitError{"concurrency", "limit", fmt.Sprintf("must be > 0, got %d", limit)}
	}
	return &ConcurrencyLimit{slots: make(chan struct{}, limit)}, nil
}

// TryAcquire takes a slot if one is free, without waiting, and reports
// whether it did.
func (l *ConcurrencyLimit) TryAcquire() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a free slot and takes it, or returns ctx.Err() once ctx
// is done. It fails when ctx is already done, even if a slot is free.
func (l *ConcurrencyLimit) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees a slot taken by Acquire or TryAcquire. It panics if no slot
// is taken.
func (l *ConcurrencyLimit) Release() {
	select {
	case <-l.slots:
	default:
		panic("flow: ConcurrencyLimit.Release without Acquire")
	}
}

// InFlight returns the number of slots taken.
func (l *ConcurrencyLimit) InFlight() int { return len(l.slots) }

// Limit returns the most operations allowed in flight.
func (l *ConcurrencyLimit) Limit() int { return cap(l.slots) }
