package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// At-least-once, a partition handed to another worker in a rebalance is
// read by it from the group's committed offset. The unit-of-work commit of
// its old owner may be refused (the group refuses commits while a
// rebalance completes: here every commit of all the input partitions is
// refused); the old owner then commits the revoked partitions' offsets
// when it lets them go, and no event is processed twice. Without that
// commit the new owner processed again every event since the last
// accepted commit, here all of its partitions' events.
func TestAtLeastOnceRevokeCommitsOffsets(t *testing.T) {
	env := newTestEnv(t)
	const n = 1200
	recs, _ := eventRecords(0, n)
	w1 := env.startWorker(t, "w1", WithDelivery(AtLeastOnce))
	waitReady(t, w1.w)
	refuse := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "g",
		Err: kerr.RebalanceInProgress, Count: -1, When: func(req kmsg.Request) bool {
			parts := 0
			for _, t := range req.(*kmsg.OffsetCommitRequest).Topics {
				if t.Topic == "events" {
					parts += len(t.Partitions)
				}
			}
			return parts == inputPartitions // the unit of work's, not a revoke's
		}})
	env.produce(recs)
	waitOutputs(t, env, n) // all processed by w1, none committed

	w2 := env.startWorker(t, "w2", WithDelivery(AtLeastOnce))
	waitReady(t, w2.w)
	waitAssigned(t, w1.w, w2.w)
	refuse.Remove()
	env.waitCommitted("events")
	w1.stop(t)
	w2.stop(t)
	seen, dups := map[int]bool{}, 0
	for _, recs := range env.readAll(append(outputTopics, "rejected", "dlq")...) {
		for _, r := range recs {
			id := recordID(r)
			if seen[id] {
				dups++
			}
			seen[id] = true
		}
	}
	if len(seen) != n || dups > 0 {
		t.Errorf("%d of %d events in the outputs, %d twice", len(seen), n, dups)
	}
}

// waitOutputs waits until the output, rejected and dead-letter topics hold
// n records in all (at-least-once: no transaction markers).
func waitOutputs(t *testing.T, env *testEnv, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for {
		ends, err := env.adm.ListEndOffsets(ctx, append(outputTopics, "rejected", "dlq")...)
		var sum int64
		ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		if err == nil && sum >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the outputs hold %d records, want %d", sum, n)
		case <-time.After(50 * time.Millisecond): // polling a condition
		}
	}
}

// waitAssigned waits until each worker owns some input partition.
func waitAssigned(t *testing.T, ws ...*Worker) {
	t.Helper()
	testwait.EventuallyEvery(t, waitLong, 50*time.Millisecond, "the partitions shared between the workers", func() bool {
		for _, w := range ws {
			w.mu.Lock()
			owned := len(w.parts)
			w.mu.Unlock()
			if owned == 0 {
				return false
			}
		}
		return true
	})
}

// A partition the group assigns again while the worker still runs it
// (seen after broker restarts, when kgo's assignment and its callbacks
// part ways) is restarted from its committed ledger. Opening its flow
// source a second time stopped the worker.
func TestAssignedAgainWhileOwned(t *testing.T) {
	env := newTestEnv(t)
	const n = 4000
	recs, bad := eventRecords(0, n)
	env.produce(recs[:n/2])
	rw := env.startWorker(t, "w1")
	testwait.Eventually(t, "w1 to own every input partition", func() bool { return ownedInputs(rw.w) == inputPartitions })
	env.waitCommitted("events")
	rw.w.mu.Lock()
	cl := rw.w.sess.client()
	rw.w.mu.Unlock()
	rw.w.onAssigned(context.Background(), cl, map[string][]int32{"events": {0, 1}})
	testwait.Eventually(t, "the partitions assigned again to run", func() bool {
		rw.w.mu.Lock()
		defer rw.w.mu.Unlock()
		ready := 0
		for _, p := range rw.w.parts {
			if !p.reward && p.ready.Load() {
				ready++
			}
		}
		return ready == inputPartitions
	})
	env.produce(recs[n/2:])
	env.waitCommitted("events")
	rw.stop(t)
	env.verify(t, n, bad, 0, 0)
}
