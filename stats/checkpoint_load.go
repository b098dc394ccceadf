package stats

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LoadCheckpoint reads partition of the checkpoint topic from its start to
// (at least) the high watermark it has when LoadCheckpoint is called, with
// read_committed, and returns the newest checkpoint of source. found is
// false when the source has none (or its newest record is a tombstone): the
// source starts from zero.
//
// Records of transactions still open when LoadCheckpoint is called are
// waited for: it returns once they are committed (and counted) or aborted
// (and ignored), at most the transaction timeout later. If the newest record
// of source cannot be decoded, LoadCheckpoint fails rather than return an
// older checkpoint.
//
// clientOpts are the caller's connection options (seed brokers, TLS, SASL,
// dialer); LoadCheckpoint creates and closes its own consumer. ctx bounds the
// whole read.
func LoadCheckpoint(ctx context.Context, clientOpts []kgo.Opt, topic, source string, partition int32) (c Checkpoint, found bool, err error) {
	all, err := LoadCheckpoints(ctx, clientOpts, topic, map[string]int32{source: partition})
	if err != nil {
		return Checkpoint{}, false, err
	}
	c, found = all[source]
	return c, found, nil
}

// LoadCheckpoints is LoadCheckpoint for many sources at once, with one
// consumer: sources maps each source name to its checkpoint partition. The
// result holds the sources that have a checkpoint.
func LoadCheckpoints(ctx context.Context, clientOpts []kgo.Opt, topic string, sources map[string]int32) (map[string]Checkpoint, error) {
	if topic == "" {
		return nil, errInvalidConfig("empty checkpoint topic")
	}
	out := make(map[string]Checkpoint, len(sources))
	if len(sources) == 0 {
		return out, nil
	}
	parts := make(map[int32]kgo.Offset)
	for s, p := range sources {
		if s == "" || p < 0 {
			return nil, errInvalidConfig("source %q partition %d", s, p)
		}
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := newReader(clientOpts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	starts, ends, err := listOffsets(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	wantEnds := make(map[int32]int64, len(parts))
	for p := range parts {
		end, ok := ends[p]
		if !ok {
			return nil, &TopicError{Topic: topic, Op: "load checkpoint", Err: fmt.Errorf("%w: no partition %d (the topic has %d)", ErrTopicMismatch, p, len(ends))}
		}
		wantEnds[p] = end
	}
	track := newCatchUp(starts, wantEnds)

	type latest struct {
		c   Checkpoint
		ok  bool  // false: tombstone
		err error // newest record is undecodable
	}
	newest := make(map[string]latest, len(sources))
	for !track.done() {
		pctx, cancel := context.WithTimeout(ctx, recheckEvery)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, &TopicError{Topic: topic, Op: "load checkpoint", Err: err}
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			if fetchErr == nil && !isStopErr(err) {
				fetchErr = &TopicError{Topic: topic, Op: fmt.Sprintf("load checkpoint: fetch partition %d", p), Err: err}
			}
		})
		if fetchErr != nil {
			return nil, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			track.saw(r.Partition, r.Offset)
			if r.Attrs.IsControl() {
				return
			}
			src := string(r.Key)
			if p, ok := sources[src]; !ok || p != r.Partition {
				return
			}
			if r.Value == nil {
				newest[src] = latest{}
				return
			}
			c, err := DecodeCheckpoint(src, r.Value)
			if err != nil {
				err = &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			newest[src] = latest{c: c, ok: err == nil, err: err}
		})
		if fs.Empty() && !track.done() {
			if starts, _, err := listOffsets(ctx, adm, topic); err == nil {
				track.starts(starts)
			}
		}
	}
	for src, l := range newest {
		if l.err != nil {
			return nil, l.err
		}
		if l.ok {
			out[src] = l.c
		}
	}
	return out, nil
}
