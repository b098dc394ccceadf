package suite

import (
	"context"
	"testing"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicRecords reads every record of topic (control records included,
// read_uncommitted) and returns how many there are and how many offsets
// its partitions span: fewer records than offsets means the log cleaner
// has removed some.
func TopicRecords(ctx context.Context, t *testing.T, addr, topic string) (records, span int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addr)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, o.Partition)
		span += o.Offset - s.Offset
		if o.Offset > s.Offset {
			left[o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset < end {
				records++
				if r.Offset == end-1 {
					delete(left, r.Partition)
				}
			}
		})
	}
	return records, span
}
