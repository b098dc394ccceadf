package broker

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A read_committed reader whose fetches are cut by their size limit in
// the middle of a partition must not see the records of an aborted
// transaction (kfake lists no aborted transaction for a partition it
// cut: see wholePartitions). Each of the 3 partitions holds an aborted
// record, its ABORT marker, then a committed one; a FetchMaxBytes of 1
// byte cut every response after its first batch before the fix.
func TestReadCommittedCutFetchHidesAbortedRecords(t *testing.T) {
	b := start(t, Partitions(3), SeedTopics("t"))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := client(t, b, kgo.TransactionalID("x"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for part := int32(0); part < 3; part++ {
			r := &kgo.Record{Topic: "t", Partition: part, Value: []byte(fmt.Sprintf("%v-%d", bool(commit), part))}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}

	for _, limit := range []int32{1, 50 << 20} {
		cl := client(t, b, kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.FetchMaxBytes(limit), kgo.KeepControlRecords())
		got, seen := map[string]bool{}, 0
		for seen < 3 { // each partition's last offset is the COMMIT marker
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("FetchMaxBytes %d: read %v, not every partition's end", limit, got)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Attrs.IsControl() {
					if r.Offset == 3 {
						seen++
					}
					return
				}
				got[string(r.Value)] = true
			})
		}
		want := map[string]bool{"true-0": true, "true-1": true, "true-2": true}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("FetchMaxBytes %d: read_committed read %v, want %v (no false-*: those were aborted)", limit, got, want)
		}
	}
}

func TestWholePartitionsSharesTheLimit(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.IsolationLevel = 1
	req.MaxBytes = 64 << 20
	req.SessionID, req.SessionEpoch = 7, 3
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "gone"}}
	for _, topic := range []string{"a", "b"} {
		rt := kmsg.FetchRequestTopic{Topic: topic}
		for p := int32(0); p < 16; p++ {
			rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{Partition: p, PartitionMaxBytes: 8 << 20})
		}
		req.Topics = append(req.Topics, rt)
	}
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1000 // less than the share: kept

	if _, _, handled := wholePartitions(req); handled {
		t.Fatal("wholePartitions answered the request; kfake must")
	}
	if req.MaxBytes != math.MaxInt32 || req.SessionEpoch != -1 || req.ForgottenTopics != nil {
		t.Errorf("MaxBytes %d, SessionEpoch %d, ForgottenTopics %v: want no limit, no session", req.MaxBytes, req.SessionEpoch, req.ForgottenTopics)
	}
	if got := req.Topics[0].Partitions[0].PartitionMaxBytes; got != 1000 {
		t.Errorf("a partition asking 1000 bytes now asks %d", got)
	}
	if got := req.Topics[1].Partitions[5].PartitionMaxBytes; got != 2<<20 {
		t.Errorf("a partition asking 8 MiB of a 64 MiB response shared by 32 now asks %d, want 2 MiB", got)
	}

	req.MaxBytes = 1 << 20 // a share below minPartitionBytes is raised to it
	req.Topics[1].Partitions[5].PartitionMaxBytes = 8 << 20
	wholePartitions(req)
	if got := req.Topics[1].Partitions[5].PartitionMaxBytes; got != 256<<10 {
		t.Errorf("with a 1 MiB response over 32 partitions a partition asks %d, want 256 KiB", got)
	}

	plain := kmsg.NewPtrFetchRequest() // read_uncommitted: untouched
	plain.MaxBytes, plain.SessionEpoch = 100, 2
	wholePartitions(plain)
	if plain.MaxBytes != 100 || plain.SessionEpoch != 2 {
		t.Errorf("a read_uncommitted fetch was changed: MaxBytes %d, SessionEpoch %d", plain.MaxBytes, plain.SessionEpoch)
	}
}
