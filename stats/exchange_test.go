package stats

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

func newExchange(t *testing.T, conn []kgo.Opt, topic string, extra ...kgo.Opt) *Exchange {
	t.Helper()
	pub, err := NewPublisher(topic)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExchange(newClient(t, conn, extra...), pub, newView(t, conn, topic))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExchange runs two nodes, each with its own Exchange: each sees the
// other's reports (and its own) through flow.Exchange.
func TestExchange(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 2))
	var a, b flow.Exchange = newExchange(t, conn, "stats"), newExchange(t, conn, "stats")

	ra := worker{sources: []string{"events/0"}, budgets: []string{"all"}}.reports(1)
	rb := worker{sources: []string{"events/1", "events/2"}, budgets: []string{"all"}}.reports(1)
	if err := a.Publish(ra); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(rb); err != nil {
		t.Fatal(err)
	}
	for _, ex := range []flow.Exchange{a, b} {
		waitFor(t, "both nodes' reports", func() bool { return len(ex.View("all", nil)) == 3 })
	}
	got := a.View("all", []flow.Report{{Budget: "keep"}})
	if len(got) != 4 || got[0].Budget != "keep" || !sameReport(got[1], ra[0]) || !sameReport(got[2], rb[0]) || !sameReport(got[3], rb[1]) {
		t.Fatalf("View appended %+v", got)
	}
	if err := a.(*Exchange).Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := a.(*Exchange).Produced(); n != 1 {
		t.Fatalf("produced = %d", n)
	}
}

func TestExchangeErrors(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 1))

	e := newExchange(t, conn, "stats")
	if err := e.Publish([]flow.Report{{Budget: "", Source: "s"}}); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("invalid report: err = %v", err)
	}

	// A transactional client outside a transaction refuses every record:
	// the failure comes back from a later call, once.
	bad := newExchange(t, conn, "stats", kgo.TransactionalID("not-in-a-txn"))
	err := bad.Publish([]flow.Report{{Budget: "b", Source: "s"}, {Budget: "b", Source: "t"}})
	if err == nil {
		err = bad.Flush(testCtx(t))
	}
	var pe *ProduceError
	if err == nil || !strings.Contains(err.Error(), "not in a transaction") || !errors.As(err, &pe) || pe.Topic != "stats" || pe.Budget != "b" {
		t.Fatalf("err = %v", err)
	}
	if err := bad.Flush(testCtx(t)); err != nil {
		t.Fatalf("error reported twice: %v", err)
	}
	if bad.Failed() != 2 || bad.Produced() != 0 {
		t.Fatalf("failed = %d, produced = %d", bad.Failed(), bad.Produced())
	}

	pub, _ := NewPublisher("stats")
	other, _ := NewPublisher("other")
	v := newView(t, conn, "stats")
	cl := newClient(t, conn)
	if _, err := NewExchange(cl, other, v); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("topic mismatch: err = %v", err)
	}
	if _, err := NewExchange(nil, pub, v); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil client: err = %v", err)
	}
	if _, err := NewPublisher(""); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty topic: err = %v", err)
	}
}

// TestPartitioner checks that checkpoint records land in the partition they
// name while other topics keep hashing keys like kgo's default partitioner.
func TestPartitioner(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, CheckpointTopic("ck", 4), StatsTopic("stats", 5))
	mixed := newClient(t, conn, kgo.RecordPartitioner(Partitioner(nil, "ck")))
	plain := newClient(t, conn)
	ctx := testCtx(t)

	for p := int32(0); p < 4; p++ {
		r, err := CheckpointRecord("ck", p, Checkpoint{Source: SourceName("events", p), Offset: 1})
		if err != nil {
			t.Fatal(err)
		}
		res := mixed.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil || res[0].Record.Partition != p {
			t.Fatalf("checkpoint for partition %d went to %d (%v)", p, res[0].Record.Partition, err)
		}
	}
	bad, _ := CheckpointRecord("ck", 9, Checkpoint{Source: "events/9"})
	if err := mixed.ProduceSync(ctx, bad).FirstErr(); err == nil {
		t.Fatal("a checkpoint for partition 9 of 4 was accepted")
	}

	pub, _ := NewPublisher("stats")
	for i := range 20 {
		recs, _ := pub.Records([]flow.Report{{Budget: "b", Source: SourceName("events", int32(i))}})
		r1 := mixed.ProduceSync(ctx, recs[0])
		again, _ := pub.Records([]flow.Report{{Budget: "b", Source: SourceName("events", int32(i))}})
		r2 := plain.ProduceSync(ctx, again[0])
		if r1.FirstErr() != nil || r2.FirstErr() != nil || r1[0].Record.Partition != r2[0].Record.Partition {
			t.Fatalf("key %d: partition %d vs %d", i, r1[0].Record.Partition, r2[0].Record.Partition)
		}
	}
}
