package initcfg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Sample reads at most max records of topic, the newest of each partition
// (max shared out between the partitions), within timeout, and returns
// them in partition and offset order. It only reads: it lists the topic
// and its offsets and fetches the partitions directly (no consumer group,
// no offset commit, no write); it reads committed records only. A
// partition whose records it could not all read in time gives what it
// read; truncated says so. opts reach the brokers.
func Sample(ctx context.Context, opts []kgo.Opt, topic string, max int, timeout time.Duration) (recs []Record, truncated bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, false, err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, false, fmt.Errorf("list topic %s: %w", topic, err)
	}
	td, ok := topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 {
		return nil, false, fmt.Errorf("topic %s does not exist", topic)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, false, fmt.Errorf("start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, false, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	from, want := plan(starts[topic], ends[topic], max)
	if len(from) == 0 {
		return nil, false, fmt.Errorf("topic %s has no record", topic)
	}
	offsets := map[int32]kgo.Offset{}
	for p, o := range from {
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.KeepControlRecords())...) // a transaction's marker may end a partition
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	byPart := map[int32][]Record{}
	done := map[int32]bool{}
	left := len(from)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, false, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[topic][r.Partition].Offset
			if r.Offset >= end || done[r.Partition] {
				return
			}
			if !r.Attrs.IsControl() {
				byPart[r.Partition] = append(byPart[r.Partition], Record{Key: r.Key, Value: r.Value,
					Timestamp: r.Timestamp, Partition: r.Partition, Offset: r.Offset})
			}
			if r.Offset == end-1 || len(byPart[r.Partition]) == want[r.Partition] {
				done[r.Partition] = true
				left--
			}
		})
	}
	for p := range int32(len(td.Partitions)) {
		recs = append(recs, byPart[p]...)
	}
	return recs, left > 0, nil
}

// plan returns, for each partition with records, the offset to read from
// (the newest records) and how many to read at most: limit shared out
// evenly, what a short partition leaves going to the others.
func plan(starts, ends map[int32]kadm.ListedOffset, limit int) (from map[int32]int64, want map[int32]int) {
	from, want = map[int32]int64{}, map[int32]int{}
	avail := map[int32]int64{}
	for p, e := range ends {
		if n := e.Offset - starts[p].Offset; n > 0 {
			avail[p] = n
		}
	}
	for left := limit; left > 0 && len(avail) > 0; {
		share := max(int64(left)/int64(len(avail)), 1)
		for p, n := range avail {
			take := min(share, n, int64(left))
			want[p] += int(take)
			left -= int(take)
			if avail[p] = n - take; avail[p] == 0 {
				delete(avail, p)
			}
			if left == 0 {
				break
			}
		}
	}
	for p, n := range want {
		from[p] = ends[p].Offset - int64(n)
	}
	return from, want
}
