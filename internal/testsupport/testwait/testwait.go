// Package testwait is the one way tests wait for something that happens
// on its own time (a worker joining its group, a commit, a record
// arriving): poll a condition until it holds, with a deadline generous
// enough for a loaded machine, and fail the test with what was awaited.
// A test never sleeps to let something happen.
package testwait

import (
	"testing"
	"time"
)

// Patience is how long Eventually waits: far more than anything should
// take, so that only a real hang fails a test.
const Patience = 60 * time.Second

// Tick is how often Eventually checks its condition.
const Tick = 10 * time.Millisecond

// Eventually returns as soon as cond is true, checking it every Tick;
// after Patience it fails the test naming what it waited for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyEvery(t, Patience, Tick, what, cond)
}

// EventuallyEvery is Eventually with another patience and tick (a fine
// tick for a test that times how soon something happens).
func EventuallyEvery(t testing.TB, patience, tick time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(patience, tick, cond) {
		t.Fatalf("gave up after %v waiting for %s", patience, what)
	}
}

// Poll checks cond every tick until it holds (true) or patience has
// passed (false), for callers that report the failure themselves.
func Poll(patience, tick time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-ticker.C:
		}
	}
	return true
}
