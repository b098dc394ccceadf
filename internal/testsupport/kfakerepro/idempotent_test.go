package kfakerepro

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// An idempotent producer whose produce was written but not answered
// resends it with the same sequence number, and the broker answers with
// the offset of the first write. kfake saves the producers' sequence
// windows only on a graceful stop: after a SIGKILL it has none (or those
// of its last graceful stop), so it takes the resent batch for a new one
// and writes it a second time. Real Kafka rebuilds the producer state
// from the log.
func TestIdempotentRetryAfterCrashWrittenTwice(t *testing.T) {
	skipUnlessRepro(t, "sequence windows are saved only on a graceful stop: a produce retried across a SIGKILL is written twice")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := startBroker(t, t.TempDir())
	cl := rawClient(t, b)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(init.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	req := produceRequest(init.ProducerID, init.ProducerEpoch, "once")
	for i, want := range []int64{0, 0} { // the second is a retry: deduplicated
		if off := produceOffset(ctx, t, cl, req); off != want {
			t.Fatalf("produce %d before the crash: offset %d, want %d", i, off, want)
		}
	}
	cl.Close()
	b.kill(t)
	b = b.restart(t)
	cl = rawClient(t, b)
	defer cl.Close()
	if off := produceOffset(ctx, t, cl, req); off != 0 {
		t.Errorf("the retry after the crash was written again at offset %d, want the first write's offset 0", off)
	}
}

func rawClient(t *testing.T, b *broker) *kgo.Client {
	t.Helper()
	// Produce v12 and below name topics; v13 needs topic IDs.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// produceRequest returns an idempotent produce of one record to t/0,
// sequence 0.
func produceRequest(pid int64, epoch int16, value string) *kmsg.ProduceRequest {
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the length's own varint is one byte
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, NumRecords: 1, Records: rec.AppendTo(nil),
	}
	raw := batch.AppendTo(nil)
	batch.Length = int32(len(raw) - 12)
	raw = batch.AppendTo(nil)
	batch.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = batch.AppendTo(nil)
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic, topic.Partitions = "t", []kmsg.ProduceRequestTopicPartition{p}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.Topics = -1, 5000, []kmsg.ProduceRequestTopic{topic}
	return req
}

// produceOffset sends req and returns the offset the broker gives it.
func produceOffset(ctx context.Context, t *testing.T, cl *kgo.Client, req *kmsg.ProduceRequest) int64 {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return p.BaseOffset
}
