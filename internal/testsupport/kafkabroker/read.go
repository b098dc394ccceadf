package kafkabroker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CountCommitted counts the committed records of topic, reading each of
// its partitions up to its last stable offset (whose last record is a
// transaction marker). A restarted broker answers before it leads every
// partition again: the offsets are asked until all partitions answer.
func CountCommitted(ctx context.Context, addr, topic string, partitions int) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(addr)...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
		if err == nil && ends.Error() == nil && len(ends[topic]) == partitions {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("offsets of %s: %v, %v", topic, err, ends.Error())
		case <-time.After(200 * time.Millisecond):
		}
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	n := 0
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return n, fmt.Errorf("reading %s: %w", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				n++
			}
			if end, ok := left[r.Partition]; ok && r.Offset >= end-1 {
				delete(left, r.Partition)
			}
		})
	}
	return n, nil
}
