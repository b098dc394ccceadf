package stats

import (
	"context"

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
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
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
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
func LoadCheckpoints(ctx context.Context, clientOpts []kgo.Opt, topic string, sources map[string]int32) (map[string]Checkpoint, error) {
	if topic == "" {
		return nil, errInvalidConfig("empty checkpoint topic")
	}
	out := make(map[string]Checkpoint, len(sources))
	if len(sources) == 0 {
		return out, nil
	}
	var parts []int32
	for s, p := range sources {
		if s == "" || p < 0 {
			return nil, errInvalidConfig("source %q partition %d", s, p)
		}
		parts = append(parts, p)
	}
	type latest struct {
		c   Checkpoint
		ok  bool  // false: tombstone
		err error // newest record is undecodable
	}
	newest := make(map[string]latest, len(sources))
	err := readToEnd(ctx, clientOpts, topic, "load checkpoint", parts, func(r *kgo.Record) error {
		src := string(r.Key)
		if p, ok := sources[src]; !ok || p != r.Partition {
			return nil
		}
		if r.Value == nil {
			newest[src] = latest{}
			return nil
		}
		c, err := DecodeCheckpoint(src, r.Value)
		if err != nil {
			err = &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
		}
		newest[src] = latest{c: c, ok: err == nil, err: err}
		return nil
	})
	if err != nil {
		return nil, err
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
