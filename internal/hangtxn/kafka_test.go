package hangtxn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/testsupport/testwait"
)

const (
	topic      = "t"
	partitions = 3
	txnID      = "hangtxn-test"
	batch      = 99
)

// TestKafkaLeavesACommitOpen makes Apache Kafka leave a committed
// transaction open on a partition, and completes it. On a cluster of three
// nodes, the topic's partitions have one replica each, on a node other
// than the transaction's coordinator. A transaction writes to every
// partition; that node is stopped gracefully, which leaves the partitions
// without a leader; then the transaction commits. The coordinator, whose
// metadata names no leader for them, skips their markers ("likely
// deleted") and logs the transaction complete, as a coordinator reloading
// a PREPARE_COMMIT on a restarting cluster does. Once the node is back,
// Find must report each partition, Decide find the commit, Complete write
// its marker, and every record committed must then be read, once.
func TestKafkaLeavesACommitOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node Apache Kafka cluster")
	}
	b := kafkabroker.Start(t, kafkabroker.Nodes(3), kafkabroker.TransactionVersion(2))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seeds := kafkabroker.Seeds(b.Addr())
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	coord := coordinator(ctx, t, adm)
	data := coord%3 + 1 // the node that holds the topic
	createOn(ctx, t, cl, data)

	// An open transaction its coordinator has is not a hang.
	tx, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		tx.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if hangs, err := Find(ctx, cl, Scope{topic: nil}); err != nil || len(hangs) != 0 {
		t.Fatalf("an ongoing transaction: %v, %v; want no hang", hangs, err)
	}

	if err := b.StopNode(int(data) - 1); err != nil {
		t.Fatal(err)
	}
	leaderless(ctx, t, cl, coord)
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	completed(ctx, t, adm)
	if err := b.RestartNode(int(data) - 1); err != nil {
		t.Fatal(err)
	}

	hangs := settled(ctx, t, cl)
	if len(hangs) != partitions {
		t.Fatalf("hangs %v: want one on each of the %d partitions", hangs, partitions)
	}
	if err := Decide(ctx, cl, []kgo.Opt{kgo.SeedBrokers(seeds...)}, hangs); err != nil {
		t.Fatal(err)
	}
	for _, h := range hangs {
		t.Log(h)
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
	if got, err := kafkabroker.CountCommitted(ctx, b.Addr(), topic, partitions); err != nil || got != batch {
		t.Fatalf("read %d committed records (%v), committed %d", got, err, batch)
	}
}

// waitFor polls cond (testwait.Poll) for up to two minutes, and then
// fails the test with what() (what cond last saw).
func waitFor(t *testing.T, what func() string, cond func() bool) {
	t.Helper()
	if !testwait.Poll(2*time.Minute, 200*time.Millisecond, cond) {
		t.Fatalf("gave up after 2m waiting for %s", what())
	}
}

// coordinator returns the node coordinating txnID, once the cluster has
// made its transaction state topic.
func coordinator(ctx context.Context, t *testing.T, adm *kadm.Client) int32 {
	t.Helper()
	var r kadm.FindCoordinatorResponse
	waitFor(t, func() string { return fmt.Sprintf("the coordinator of %s: %v", txnID, r.Err) }, func() bool {
		r = adm.FindTxnCoordinators(ctx, txnID)[txnID]
		return r.Err == nil
	})
	return r.NodeID
}

// createOn creates the topic with its partitions' single replica on node.
func createOn(ctx context.Context, t *testing.T, cl *kgo.Client, node int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range int32(partitions) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{node}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating %s on node %d: %v", topic, node, err)
	}
	waitFor(t, func() string { return "the topic's leaders" }, func() bool { return answered(ctx, cl) })
}

// leaderless waits until node's metadata names no leader for any of the
// topic's partitions: the state in which its coordinator skips markers.
func leaderless(ctx context.Context, t *testing.T, cl *kgo.Client, node int32) {
	t.Helper()
	var leaders []int32
	waitFor(t, func() string { return fmt.Sprintf("node %d's leaders of %s: %v", node, topic, leaders) }, func() bool {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
			return false
		}
		leaders = leaders[:0]
		for _, p := range resp.Topics[0].Partitions {
			leaders = append(leaders, p.Leader)
		}
		for _, l := range leaders {
			if l != -1 {
				return false
			}
		}
		return true
	})
}

// completed waits until the coordinator calls the transaction committed.
func completed(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	var d kadm.DescribedTransaction
	waitFor(t, func() string { return fmt.Sprintf("%s: state %q, %v", txnID, d.State, d.Err) }, func() bool {
		ds, err := adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			return false
		}
		d = ds[txnID]
		return d.Err == nil && d.State == "CompleteCommit"
	})
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
	return err == nil && ends.Error() == nil && len(ends[topic]) == partitions
}
