package stats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recheckEvery is how long a reader that is still catching up waits for a
// record before it re-lists log start offsets, in case the records it was
// waiting for were deleted (retention, DeleteRecords) under it.
const recheckEvery = time.Second

// catchUp tracks which partitions have been read up to the end offsets they
// had when reading began.
//
// Reading is done for a partition once a record (data or control: readers
// keep control records for this) at or past end-1 was seen, or once the log
// start offset reached end. Under read_committed a reader never sees records
// past the last stable offset, so a transaction open at the start delays the
// end until it commits or aborts; an aborted or compacted-away record at
// end-1 is always followed by a record the reader does see (a commit or abort
// marker, or the newer record that superseded it).
//
// Not goroutine-safe: one reader goroutine owns it.
type catchUp struct {
	pending map[int32]int64 // partition -> end offset at start
}

func newCatchUp(starts, ends map[int32]int64) *catchUp {
	c := &catchUp{pending: make(map[int32]int64, len(ends))}
	for p, end := range ends {
		if end > starts[p] {
			c.pending[p] = end
		}
	}
	return c
}

func (c *catchUp) saw(p int32, offset int64) {
	if end, ok := c.pending[p]; ok && offset >= end-1 {
		delete(c.pending, p)
	}
}

func (c *catchUp) starts(starts map[int32]int64) {
	for p, end := range c.pending {
		if s, ok := starts[p]; ok && s >= end {
			delete(c.pending, p)
		}
	}
}

func (c *catchUp) done() bool { return len(c.pending) == 0 }

// listOffsets lists the start and end (high watermark) offsets of topic's
// partitions.
func listOffsets(ctx context.Context, adm *kadm.Client, topic string, waiting func(error)) (starts, ends map[int32]int64, err error) {
	list := func(op string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		listed, err := ListSettled(ctx, fn, topic, waiting)
		if err != nil {
			return nil, &TopicError{Topic: topic, Op: op, Err: err}
		}
		out := make(map[int32]int64)
		for p, o := range listed[topic] {
			if o.Err != nil {
				if p == -1 || errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					return nil, &TopicError{Topic: topic, Op: op, Err: errors.Join(ErrTopicNotFound, o.Err)}
				}
				return nil, &TopicError{Topic: topic, Op: op, Err: o.Err}
			}
			out[p] = o.Offset
		}
		if len(out) == 0 {
			return nil, &TopicError{Topic: topic, Op: op, Err: ErrTopicNotFound}
		}
		return out, nil
	}
	if starts, err = list("list start offsets", adm.ListStartOffsets); err != nil {
		return nil, nil, err
	}
	if ends, err = list("list end offsets", adm.ListEndOffsets); err != nil {
		return nil, nil, err
	}
	return starts, ends, nil
}

// readerOpts are the kgo options every reader of this package adds to the
// caller's connection options.
func readerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // to see the end of a partition that ends in a marker
		// Back within about a second once the brokers answer again
		// (kgo's default backs off up to 5s): a reader that lags
		// leaves the flow controllers on stale peers' reports.
		kgo.RetryBackoffFn(readerBackoff),
		// A fetch of a topic read from its start is full: at kgo's
		// default (50 MiB of compressed batches) hundreds of thousands of
		// records of a cluster of a million budgets, which kgo holds
		// decoded, and fetches the next of while the first is applied.
		// 4 MiB keeps a reader's buffers to tens of megabytes and reads as
		// fast (BenchmarkViewCatchUp); on a network it is still many
		// round trips' worth a second.
		kgo.FetchMaxBytes(readerFetchMaxBytes),
	}
}

// readerFetchMaxBytes is the readers' FetchMaxBytes.
const readerFetchMaxBytes = 4 << 20

// newReader creates a direct (group-less) consumer from the caller's
// connection options plus extra.
func newReader(clientOpts []kgo.Opt, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := make([]kgo.Opt, 0, len(clientOpts)+len(extra)+2)
	opts = append(opts, clientOpts...)
	opts = append(opts, readerOpts()...)
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, errInvalidConfig("kgo client: %v", err)
	}
	if g, _ := cl.OptValue(kgo.ConsumerGroup).(string); g != "" {
		cl.Close()
		return nil, errInvalidConfig("client options name consumer group %q; a stats reader consumes without a group", g)
	}
	return cl, nil
}

// isStopErr reports whether a fetch error only says that polling was stopped.
func isStopErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed)
}

// readerBackoff is the retry backoff of the readers: 100ms more per
// consecutive failure, at most one second.
func readerBackoff(fails int) time.Duration {
	return min(time.Duration(max(fails, 1))*100*time.Millisecond, time.Second)
}

// readToEnd reads partitions of topic from their start to (at least) the
// high watermarks they have when it is called, with read_committed, and
// calls fn with every data record, in offset order within a partition.
// Transactions still open when it starts are waited for: their records are
// passed on once committed, never when aborted, at most the transaction
// timeout later. The first error fn returns stops the read and is
// returned. op names the caller in errors ("load ledgers").
func readToEnd(ctx context.Context, clientOpts []kgo.Opt, topic, op string, parts []int32, fn func(*kgo.Record) error) error {
	offsets := make(map[int32]kgo.Offset, len(parts))
	for _, p := range parts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := newReader(clientOpts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, ends, err := listOffsets(ctx, adm, topic, nil)
	if err != nil {
		return err
	}
	wantEnds := make(map[int32]int64, len(offsets))
	for p := range offsets {
		end, ok := ends[p]
		if !ok {
			return &TopicError{Topic: topic, Op: op, Err: fmt.Errorf("%w: no partition %d (the topic has %d)", ErrTopicMismatch, p, len(ends))}
		}
		wantEnds[p] = end
	}
	track := newCatchUp(starts, wantEnds)
	for !track.done() {
		pctx, cancel := context.WithTimeout(ctx, recheckEvery)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return &TopicError{Topic: topic, Op: op, Err: err}
		}
		var stop error
		fs.EachError(func(t string, p int32, err error) {
			if stop == nil && !isStopErr(err) {
				stop = &TopicError{Topic: topic, Op: fmt.Sprintf("%s: fetch partition %d", op, p), Err: err}
			}
		})
		if stop != nil {
			return stop
		}
		fs.EachRecord(func(r *kgo.Record) {
			track.saw(r.Partition, r.Offset)
			if !r.Attrs.IsControl() && stop == nil {
				stop = fn(r)
			}
		})
		if stop != nil {
			return stop
		}
		if fs.Empty() && !track.done() {
			if starts, _, err := listOffsets(ctx, adm, topic, nil); err == nil {
				track.starts(starts)
			}
		}
	}
	return nil
}
