package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	s := newPlainSession(cl, zerolog.Nop())
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

// A sync whose unit polled nothing new while the partitions wait for a
// delay budget's next period commits no offset of its own. kgo then takes
// the broker for one without KIP-447 and holds its session lock 500 ms
// after End, which End itself waits for: the partitions resumed up to
// 500 ms into their period. Such a unit commits a committed offset again,
// so that kgo's End takes its KIP-447 path.
func TestDelayedSyncEndsWithoutTheOldBrokerPause(t *testing.T) {
	env := newTestEnv(t)
	log := &txnEndLog{}
	w := env.startDelayWorker(t, "w1", ClientOpts(kgo.WithLogger(log)))
	waitReady(t, w.w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := env.follow(ctx, t, "out")
	var recs []*kgo.Record
	for i := range 2400 { // twelve periods' worth: the partitions wait for the next period most of the time
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("u%d", i%97)),
			Value: []byte(fmt.Sprintf(`{"id":%d,"budget":"d","user":"u%d"}`, i, i%97))})
	}
	env.produce(recs)
	testwait.Eventually(t, "the first period's records out", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return len(out.at) >= delayTarget
	})
	ends, pauses := log.ends.Load(), log.pauses.Load()
	testwait.Eventually(t, "ten more transactions", func() bool { return log.ends.Load() >= ends+10 })
	if n := log.pauses.Load() - pauses; n > 0 {
		t.Errorf("%d of %d transactions took kgo's pre-KIP-447 path (a 500 ms pause each)", n, log.ends.Load()-ends)
	}
	w.stop(t)
}

// txnEndLog counts the transactions kgo ends with a commit and the times
// it pauses after one for a broker without KIP-447.
type txnEndLog struct{ ends, pauses atomic.Int64 }

func (*txnEndLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *txnEndLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	switch {
	case msg == "end transaction response successfully received":
		l.ends.Add(1)
	case strings.HasPrefix(msg, "sleeping 500ms before allowing a rebalance"):
		l.pauses.Add(1)
	}
}
