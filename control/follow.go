package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// ErrTopicNotFound is returned by FollowBatches when the control topic
// does not exist.
var ErrTopicNotFound = errors.New("control topic not found")

// Follower reads a control topic from its start and then follows it,
// handing every record to its handler from one goroutine, in offset order
// per partition. Create one with FollowBatches; Close it.
type Follower struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	caught chan struct{}
	done   chan struct{}
	once   sync.Once
}

// FollowBatches starts following topic with a client of its own, built
// from clientOpts (connection options only: no consumer group), handing
// the records of each fetch together to handle, so that a reader can
// apply many records at once (a worker catching up on 100,000 budget
// records applies them in a few batches, not one by one). A batch is
// never empty. ctx bounds only the start.
func FollowBatches(ctx context.Context, topic string, clientOpts []kgo.Opt, handle func([]*kgo.Record)) (*Follower, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), clientOpts...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return nil, fmt.Errorf("control topic %s: %w", topic, err)
	}
	pending, err := ends(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		cl.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	f := &Follower{cl: cl, cancel: cancel, caught: make(chan struct{}), done: make(chan struct{})}
	if len(pending) == 0 {
		close(f.caught)
	}
	go f.run(rctx, topic, pending, handle)
	return f, nil
}

// ends returns the end offset of every non-empty partition of topic.
func ends(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	starts, err := stats.ListSettled(ctx, adm.ListStartOffsets, topic, nil)
	if err != nil {
		return nil, fmt.Errorf("control topic %s: list offsets: %w", topic, err)
	}
	endOffs, err := stats.ListSettled(ctx, adm.ListEndOffsets, topic, nil)
	if err != nil {
		return nil, fmt.Errorf("control topic %s: list offsets: %w", topic, err)
	}
	if len(endOffs[topic]) == 0 {
		return nil, fmt.Errorf("control topic %s: %w", topic, ErrTopicNotFound)
	}
	out := map[int32]int64{}
	for p, o := range endOffs[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("control topic %s: %w", topic, errors.Join(ErrTopicNotFound, o.Err))
		}
		if s, ok := starts.Lookup(topic, p); ok && o.Offset > s.Offset {
			out[p] = o.Offset
		}
	}
	return out, nil
}

func (f *Follower) run(ctx context.Context, topic string, pending map[int32]int64, handle func([]*kgo.Record)) {
	defer close(f.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := f.cl.PollFetches(pctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		if rs := fs.Records(); len(rs) > 0 {
			handle(rs)
			for _, r := range rs {
				if end, ok := pending[r.Partition]; ok && r.Offset >= end-1 {
					delete(pending, r.Partition)
					if len(pending) == 0 {
						close(f.caught)
					}
				}
			}
		}
		if len(pending) > 0 && fs.NumRecords() == 0 {
			// Records we wait for may have been deleted under us.
			if starts, err := kadm.NewClient(f.cl).ListStartOffsets(ctx, topic); err == nil {
				for p, end := range pending {
					if s, ok := starts.Lookup(topic, p); ok && s.Offset >= end {
						delete(pending, p)
					}
				}
				if len(pending) == 0 {
					close(f.caught)
				}
			}
		}
	}
}

// WaitCaughtUp returns once every record that was in the topic when
// FollowBatches was called has been handled, or with ctx's error.
func (f *Follower) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-f.caught:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops following and waits for the handler's last call to return.
func (f *Follower) Close() {
	f.once.Do(func() {
		f.cancel()
		f.cl.Close()
		<-f.done
	})
}

// Topic is the spec of a control topic for stats.EnsureTopics: compacted,
// one partition, so that every reader sees all changes in one order.
func Topic(name string) stats.TopicSpec {
	return stats.TopicSpec{Name: name, Partitions: 1, Compact: true}
}
