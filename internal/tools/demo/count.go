package demo

import (
	"context"
	"fmt"

	"github.com/throttler/throttler/internal/tools/loadgen"
	"github.com/throttler/throttler/pipeline"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readAll reads topics from their start to their current end with
// read_committed and calls fn on every data record. Every writer must have
// finished (no transaction open), or the end is never reached before ctx
// ends. Control records (transaction markers) are kept, so that a
// partition whose last batch is a marker is known to be read to its end.
func readAll(ctx context.Context, brokers []string, adm *kadm.Client, topics []string, fn func(*kgo.Record)) error {
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	left := map[string]map[int32]int64{} // the last offset still to read
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && o.Offset <= s.Offset {
			return // empty
		}
		if left[o.Topic] == nil {
			left[o.Topic] = map[int32]int64{}
		}
		left[o.Topic][o.Partition] = o.Offset - 1
	})
	pending := 0
	for _, ps := range left {
		pending += len(ps)
	}
	if pending == 0 {
		return nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	for pending > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading %v: %d partitions not read to their end: %w", topics, pending, ctx.Err())
		}
		if fs.IsClientClosed() {
			return kgo.ErrClientClosed
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				fn(r)
			}
			if last, ok := left[r.Topic][r.Partition]; ok && r.Offset >= last {
				delete(left[r.Topic], r.Partition)
				pending--
			}
		})
	}
	return nil
}

// counted is what the topics hold at the end.
type counted struct {
	passes   map[string]uint64 // passed events by budget (the header)
	variants map[string]uint64 // passed events by topic
	users    map[string]map[string]bool
	clicks   map[string]uint64 // clicks by budget
	events   uint64            // input events
}

// countTopics counts the passed events in the output and variant topics,
// the clicks in the reward topic and the events in the input topic.
func countTopics(ctx context.Context, brokers []string, adm *kadm.Client, enc loadgen.Encoder) (*counted, error) {
	c := &counted{
		passes:   map[string]uint64{},
		variants: map[string]uint64{},
		users:    map[string]map[string]bool{},
		clicks:   map[string]uint64{},
	}
	err := readAll(ctx, brokers, adm, append(append([]string(nil), outputTopics...), topicClicks), func(r *kgo.Record) {
		if r.Topic == topicClicks {
			if ev, err := enc.Decode(r.Value); err == nil { // the clicks are in the events' format
				c.clicks[ev.Campaign]++
			}
			return
		}
		c.passes[header(r, pipeline.HeaderBudget)]++
		c.variants[r.Topic]++
		if c.users[r.Topic] == nil {
			c.users[r.Topic] = map[string]bool{}
		}
		c.users[r.Topic][string(r.Key)] = true
	})
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topicEvents)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	ends.Each(func(o kadm.ListedOffset) { c.events += uint64(o.Offset) })
	return c, nil
}
