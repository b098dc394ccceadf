package consumer

import (
	"testing"
	"time"
)

// TestRequestSync: a request the tuner has not taken yet is replaced by
// the next one, and a request never blocks the loop.
func TestRequestSync(t *testing.T) {
	w := &Worker{syncReq: make(chan time.Time, 1)}
	t1, t2 := time.Unix(1, 0), time.Unix(2, 0)
	w.requestSync(t1)
	w.requestSync(t2)
	if got := <-w.syncReq; !got.Equal(t2) {
		t.Fatalf("request %v, want the newer %v", got, t2)
	}
	select {
	case got := <-w.syncReq:
		t.Fatalf("a second request %v is pending", got)
	default:
	}
}
