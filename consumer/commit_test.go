package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// At least once, a unit's ledgers are written only once every output of
// the unit is (writeAhead), while the next unit is processed. Here the
// output topic "out" refuses a produce request: the session fails,
// starts again from the ledgers written, and reads the records after
// them again. Every event ends up written, at least once, and the ledgers
// never count more passes than the output topics hold.
func TestAtLeastOnceLedgersFollowTheirOutputs(t *testing.T) {
	env := newTestEnv(t)
	const n = 3000
	recs, _ := eventRecords(0, n)
	w := env.startWorker(t, "alo", WithDelivery(AtLeastOnce), SessionRestarts(100, time.Minute, 10*time.Millisecond))
	waitReady(t, w.w)
	fault := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out",
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	env.produce(recs)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("the output topic refused no produce request: %v", err)
	}
	env.waitCommitted("events")
	w.stop(t)

	got := env.readAll(append(outputTopics, "rejected", "dlq")...)
	seen := map[int]bool{}
	outputs := 0
	for topic, rs := range got {
		for _, r := range rs {
			if id := recordID(r); id >= 0 && id < n {
				seen[id] = true
			}
			if topic != "rejected" && topic != "dlq" {
				outputs++
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d events written", len(seen), n)
	}
	var passed uint64
	for _, led := range env.ledgers() {
		for _, r := range led.Reports {
			passed += r.Total.Passed
		}
	}
	t.Logf("%d events: the ledgers count %d passes, the output topics hold %d records", n, passed, outputs)
	if passed > uint64(outputs) {
		t.Fatalf("the ledgers count %d passes, the output topics hold only %d records", passed, outputs)
	}
}

// At least once, a unit's committer may still wait for its outputs while
// the next unit is processed and its own committer starts (writeAhead).
// Here the broker holds the first produce to the output topic until a
// second committer waits behind the first, then refuses it: the later
// unit must not write its ledgers either (were they written, the session
// would start again after the refused unit's records, which would be
// lost). Every event ends up written, at least once.
func TestAtLeastOnceLaterUnitWaitsForTheRefusedOne(t *testing.T) {
	env := newTestEnv(t)
	const n = 4000
	w := env.startWorker(t, "alo", WithDelivery(AtLeastOnce), SessionRestarts(100, time.Minute, 10*time.Millisecond))
	waitReady(t, w.w)
	env.holdFirstOutput(t, w.w, true)
	env.produceInSteps(t, 0, n)
	env.waitCommitted("events")
	w.stop(t)

	got := env.readAll(append(outputTopics, "rejected", "dlq")...)
	seen := map[int]bool{}
	for _, rs := range got {
		for _, r := range rs {
			if id := recordID(r); id >= 0 && id < n {
				seen[id] = true
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d events written", len(seen), n)
	}
}

// A committer writes its unit's ledgers and commits its offsets only
// once the committer of the unit before is done, and not at all when that
// one failed: were they written, the session would start again after the
// failed unit's records. (On one broker, as in the test above, the
// produce connection's order hides this; on a cluster, the later unit's
// outputs can be acknowledged by another broker first.)
func TestCommitterWaitsForTheUnitBefore(t *testing.T) {
	env := newTestEnv(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := &Worker{prodCtx: context.Background()}
	sess := newPlainSession(cl, zerolog.Nop())
	ledgers := func() []*kgo.Record { return []*kgo.Record{{Topic: "dlq", Value: []byte("a ledger record")}} }
	res := make(chan error, 1)

	prev := &committer{done: make(chan struct{})}
	go func() { res <- w.commitAhead(sess, newUnitAcks(w.produced), ledgers(), nil, prev) }()
	prev.err = errors.New("the unit before failed")
	close(prev.done)
	if err := <-res; err != prev.err {
		t.Fatalf("after the unit before failed: %v, want its error", err)
	}
	if n := len(env.readAll("dlq")["dlq"]); n != 0 {
		t.Fatalf("%d ledger records written after the unit before failed", n)
	}

	prev = &committer{done: make(chan struct{})}
	go func() { res <- w.commitAhead(sess, newUnitAcks(w.produced), ledgers(), nil, prev) }()
	close(prev.done)
	if err := <-res; err != nil {
		t.Fatalf("after the unit before succeeded: %v", err)
	}
	if n := len(env.readAll("dlq")["dlq"]); n != 1 {
		t.Fatalf("%d ledger records written after the unit before succeeded, want 1", n)
	}
}

// holdFirstOutput has the broker hold the worker's first produce request
// to the output topic until a second committer waits behind the one of
// that request's unit (at least once), then answer it, or refuse it
// with refuse set. The test fails if no second committer came.
func (env *testEnv) holdFirstOutput(t *testing.T, w *Worker, refuse bool) {
	out := env.cluster.TopicInfo("out").TopicID
	chained := func() bool {
		c := w.committing.Load()
		return c != nil && c.prev.Load() != nil
	}
	var held, sawChain atomic.Bool
	env.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		env.cluster.KeepControl()
		if writesTo(req.(*kmsg.ProduceRequest), out) && held.CompareAndSwap(false, true) {
			env.cluster.SleepControl(func() {
				deadline := time.Now().Add(waitLong)
				for !chained() && time.Now().Before(deadline) { // a condition polled
					time.Sleep(time.Millisecond)
				}
				sawChain.Store(chained())
				if refuse {
					env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out",
						Err: kerr.TopicAuthorizationFailed, Count: 1})
				}
			})
		}
		return nil, nil, false
	})
	t.Cleanup(func() {
		if held.Load() && !sawChain.Load() {
			t.Error("no second committer started while the first unit's outputs were held")
		}
	})
}

// produceInSteps produces the events of ids [first, first+n) a hundred
// at a time, 10 ms apart, so that units of work follow one another.
func (env *testEnv) produceInSteps(t *testing.T, first, n int) {
	recs, _ := eventRecords(first, n)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for i := 0; i < len(recs); i += 100 {
		if err := cl.ProduceSync(ctx, recs[i:min(i+100, len(recs))]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the input's pace, not a wait for a condition
	}
}
