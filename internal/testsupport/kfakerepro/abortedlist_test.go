package kfakerepro

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kfake answers a read_committed Fetch partition by partition, and lists
// the aborted transactions of a partition after copying its batches. When
// the response's MaxBytes is reached in the middle of a partition (after
// the response's first batch), it leaves the loop over partitions at once
// ("break full" in handleFetch), past that listing: the partition's
// batches go out with no aborted transactions, and a reader takes the
// records of an aborted transaction among them for committed ones. Real
// Kafka lists the aborted transactions of every partition it returns data
// for.
//
// Here the log of partition 0 is: "aborted" (a transaction of producer
// "x"), x's ABORT marker, "end" (not transactional). A MaxBytes of 1 byte
// cuts every response after its first batch, so the first response holds
// "aborted" alone, and kfake lists nothing with it.

// abortedThenEnd starts a kfake cluster with topic "t" of one partition
// holding an aborted record and then the non-transactional record "end".
func abortedThenEnd(t *testing.T) *kfake.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := &broker{addr: c.ListenAddrs()[0]}
	p := producer(t, b, kgo.TransactionalID("x"))
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	plain := producer(t, b)
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFetchCutMidPartitionListsNoAbortedTxn(t *testing.T) {
	skipUnlessRepro(t, "a read_committed fetch cut by its MaxBytes in the middle of a partition "+
		"lists none of that partition's aborted transactions")
	c := abortedThenEnd(t)
	b := &broker{addr: c.ListenAddrs()[0]}

	// What kfake answers: the aborted batch, and no aborted transaction.
	sp := fetchCommitted(t, b, 0, 1)
	if len(sp.RecordBatches) == 0 {
		t.Fatal("the fetch returned no batch")
	}
	if len(sp.AbortedTransactions) == 0 {
		t.Errorf("a read_committed fetch at offset 0 with MaxBytes 1 returned %d bytes of batches "+
			"and no aborted transaction; the first batch belongs to an aborted transaction", len(sp.RecordBatches))
	}
	// The same partition fetched whole lists it.
	if whole := fetchCommitted(t, b, 0, 1<<20); len(whole.AbortedTransactions) != 1 {
		t.Errorf("fetched whole, the partition lists %d aborted transactions, want 1", len(whole.AbortedTransactions))
	}

	// What a reader sees.
	if got := read(t, b, kgo.ReadCommitted(), kgo.FetchMaxBytes(1)); !slices.Equal(got, []string{"end"}) {
		t.Errorf("read_committed with FetchMaxBytes(1): %q, want only \"end\"", got)
	}
}

// fetchCommitted sends one read_committed Fetch of t/0 at offset, with the
// response limit maxBytes, and returns the partition's answer.
func fetchCommitted(t *testing.T, b *broker, offset int64, maxBytes int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	// Fetch v12 and below name topics; v13 needs topic IDs.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.IsolationLevel = 1
	req.MaxBytes = maxBytes
	req.SessionEpoch = -1 // no fetch session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %d topics", len(resp.Topics))
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch: error code %d", sp.ErrorCode)
	}
	return sp
}
