package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An at-least-once worker whose member was removed from the group (its
// session expired while the machine stalled, say) must not stop when its
// offset commit is refused: the outputs are written and the partitions'
// new owners read the records again.
func TestPlainSessionOutlivesGroupEviction(t *testing.T) {
	env := newTestEnv(t)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprint(i)), Value: []byte(`{}`)})
	}
	env.produce(recs)
	cl, err := kgo.NewClient(append(env.clientOpts(),
		kgo.ConsumerGroup("evicted"), kgo.ConsumeTopics("events"), kgo.InstanceID("member-1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())...)
	if err != nil {
		t.Fatal(err)
	}
	s := plainSession{cl: cl, log: zerolog.Nop()}
	defer s.close()
	defer s.allowRebalance() // else a failing test hangs in close
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for got := 0; got == 0; {
		fs := s.poll(ctx, 100)
		if ctx.Err() != nil {
			t.Fatal("no records polled")
		}
		got = fs.NumRecords()
	}
	resp, err := env.adm.LeaveGroup(ctx, kadm.LeaveGroup("evicted").InstanceIDs("member-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.EachError(func(l kadm.LeaveGroupResponse) { t.Fatalf("removing %s: %v", l.InstanceID, l.Err) })

	committed, err := s.end(ctx, true, nil)
	if err != nil || !committed {
		t.Fatalf("end after eviction: committed %v, err %v; want true, nil", committed, err)
	}
}

func TestGroupMovedOn(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.UnknownMemberID, true},
		{fmt.Errorf("commit: %w", kerr.IllegalGeneration), true},
		{kerr.RebalanceInProgress, true},
		{kerr.FencedInstanceID, true},
		{kerr.CoordinatorNotAvailable, false},
		{context.DeadlineExceeded, false},
		{errors.New("other"), false},
	} {
		if got := groupMovedOn(tc.err); got != tc.want {
			t.Errorf("groupMovedOn(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The group's heartbeat fails while a commit is flushing (the broker went
// away and came back): kgo's End then waits for a heartbeat that no longer
// runs, and the loss of the partitions waits for AllowRebalance. The
// worker must allow the rebalance, abort, and carry on exactly once,
// instead of failing when End's context ends.
func TestHeartbeatLostDuringCommit(t *testing.T) {
	env := newTestEnv(t)
	const n = 4000
	recs, bad := eventRecords(0, n)
	env.produce(recs[:1000])
	hb := &heartbeatLog{}
	w := env.startWorker(t, "w1", ClientOpts(kgo.WithLogger(hb)))
	waitReady(t, w.w)
	env.waitCommitted("events")

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	produce := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce},
		Err: kerr.NotLeaderForPartition, Count: -1, When: func(r kmsg.Request) bool {
			return r.(*kmsg.ProduceRequest).TransactionID != nil // the worker's, not the test's
		}})
	env.produce(recs[1000:2000])
	if err := produce.Wait(ctx, 1); err != nil {
		t.Fatal("no produce while it was faulted:", err)
	}
	fault := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, TopLevel: true, Err: kerr.UnknownMemberID})
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatal("no heartbeat while produce was faulted:", err)
	}
	testwait.Eventually(t, "the heartbeat loop to stop on the error", hb.stopped.Load)
	produce.Remove()

	env.produce(recs[2000:])
	select {
	case err := <-w.done:
		t.Fatalf("worker stopped: %v", err)
	case <-time.After(5 * time.Second): // End's context lasts 30s
	}
	env.waitCommitted("events")
	w.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// A fenced producer (here another InitProducerID for the worker's
// transactional id; after a crashed kfake restarts, its open transactions
// are aborted the same way) makes the worker start a new session instead
// of stopping, and the output stays exactly once.
func TestFencedProducerStartsNewSession(t *testing.T) {
	env := newTestEnv(t)
	const n = 4000
	recs, bad := eventRecords(0, n)
	env.produce(recs[:1000])
	w := env.startWorker(t, "w1", TransactionalID("fenced-w1"))
	waitReady(t, w.w)
	env.waitCommitted("events")

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	txnID := "fenced-w1"
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(ctx, env.admCl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatal(err)
	}
	env.produce(recs[1000:])
	env.waitCommitted("events")
	select {
	case err := <-w.done:
		t.Fatalf("worker stopped: %v", err)
	default:
	}
	w.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// heartbeatLog is a kgo logger that notes when the group's heartbeat loop
// stops on an error ("heartbeat errored", logged as the loop returns).
type heartbeatLog struct{ stopped atomic.Bool }

func (*heartbeatLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *heartbeatLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if msg == "heartbeat errored" {
		l.stopped.Store(true)
	}
}
