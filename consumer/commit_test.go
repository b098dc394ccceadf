package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
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
