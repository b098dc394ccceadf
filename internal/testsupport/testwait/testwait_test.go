package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if !Poll(Patience, time.Millisecond, func() bool { return n.Add(1) == 3 }) {
		t.Fatal("a condition that turns true was given up on")
	}
	if Poll(5*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported true")
	}
}
