package consumer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A produce the broker refuses for good (here: not authorized to write the
// output topic) aborts every transaction that retries it. The worker stops
// with the error after the GiveUp option's aborts over its window (here 3
// over 1s, not the defaults' 10 over 10s), instead of
// looping; nothing of those records was committed, so a worker started
// after the cause is gone delivers every event exactly once.
func TestPermanentProduceErrorStopsWorker(t *testing.T) {
	env := newTestEnv(t)
	const n = 3000
	recs, bad := eventRecords(0, n)
	env.produce(recs[:1000])
	w := env.startWorker(t, "w1", GiveUp(3, time.Second))
	waitReady(t, w.w)
	env.waitCommitted("events")

	refuse := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out",
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	env.produce(recs[1000:])
	var err error
	select {
	case err = <-w.done:
		w.cancel = nil // stopped: nothing for the cleanup to stop
	case <-time.After(waitLong):
		t.Fatalf("the worker still runs %v after the output topic refused every produce", waitLong)
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "giving up") {
		t.Fatalf("worker stopped with %v, want the refused produce", err)
	}
	t.Logf("stopped with: %v", err)
	refuse.Remove()

	w2 := env.startWorker(t, "w2")
	waitReady(t, w2.w)
	env.waitCommitted("events")
	w2.stop(t)
	env.verify(t, n, bad, 0, 0)
}
