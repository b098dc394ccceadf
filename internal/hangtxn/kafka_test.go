package hangtxn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

const (
	topic  = "t"
	txnID  = "hangtxn-test"
	rounds = 25
	batch  = 100
)

// TestKafkaLeavesACommitOpen makes Apache Kafka leave a committed
// transaction open on a partition and completes it. Each round commits a
// transaction and SIGKILLs the broker as soon as the commit is
// acknowledged; the restarted coordinator reloads the PREPARE_COMMIT,
// sends its markers before its metadata names the partition's leader,
// drops them ("likely deleted") and logs the transaction complete. That
// happens in a quarter to a half of the rounds here (Kafka 4.3.1 and
// 4.4.0); the test runs rounds until it does, and fails if it never does
// in 25 (the reproduction no longer reproduces: a Kafka that fixed it).
// Find must report the partition, Decide find the commit, Complete write
// its marker, and every record committed must then be read, once.
func TestKafkaLeavesACommitOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts Apache Kafka up to 25 times")
	}
	b := kafkabroker.Start(t, kafkabroker.TransactionVersion(2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	addr := b.Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// An open transaction its coordinator has is not a hang.
	open := transactional(ctx, t, addr)
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if hangs, err := Find(ctx, cl, Scope{topic: nil}); err != nil || len(hangs) != 0 {
		t.Fatalf("an ongoing transaction: %v, %v; want no hang", hangs, err)
	}
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	open.Close()

	committed := 0
	for round := range rounds {
		commit(ctx, t, addr, batch)
		committed += batch
		b.Kill()
		if err := b.Restart(); err != nil {
			t.Fatal(err)
		}
		hangs := settled(ctx, t, cl)
		if len(hangs) == 0 {
			t.Logf("round %d: Kafka wrote every marker", round)
			continue
		}
		if err := Decide(ctx, cl, []kgo.Opt{kgo.SeedBrokers(addr)}, hangs); err != nil {
			t.Fatal(err)
		}
		for _, h := range hangs {
			t.Logf("round %d: %v", round, h)
			if !h.Known || !h.Commit || h.TxnID != txnID {
				t.Fatalf("%v: want the coordinator's commit found", h)
			}
		}
		done, err := Complete(ctx, cl, hangs)
		if err != nil || len(done) != len(hangs) {
			t.Fatalf("complete: %d of %d, %v", len(done), len(hangs), err)
		}
		if hangs := settled(ctx, t, cl); len(hangs) != 0 {
			t.Fatalf("after the markers: %v", hangs)
		}
		if got, err := kafkabroker.CountCommitted(ctx, addr, topic, 3); err != nil || got != committed {
			t.Fatalf("read %d committed records (%v), committed %d", got, err, committed)
		}
		return
	}
	t.Fatalf("Apache Kafka %s wrote every marker in %d rounds: the reproduction no longer reproduces", kafkabroker.Version(), rounds)
}

func transactional(ctx context.Context, t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// commit writes n records in one committed transaction, and returns as
// soon as the commit is acknowledged (its markers may not be written).
func commit(ctx context.Context, t *testing.T, addr string, n int) {
	t.Helper()
	cl := transactional(ctx, t, addr)
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// settled returns the hangs Find reports once every partition answers
// and two reads 5 s apart agree: a restarted broker completes the
// transactions it can within that time.
func settled(ctx context.Context, t *testing.T, cl *kgo.Client) []Hang {
	t.Helper()
	var last []Hang
	lastOK := false
	for ctx.Err() == nil {
		hangs, err := Find(ctx, cl, Scope{topic: nil})
		if err == nil && lastOK && fmt.Sprint(hangs) == fmt.Sprint(last) {
			return hangs
		}
		last, lastOK = hangs, err == nil && answered(ctx, cl)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
	t.Fatalf("hangs of %s: %v", topic, ctx.Err())
	return nil
}

// answered reports whether every partition of the topic has a leader.
func answered(ctx context.Context, cl *kgo.Client) bool {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	return err == nil && ends.Error() == nil && len(ends[topic]) == 3
}
