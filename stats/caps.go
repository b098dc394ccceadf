package stats

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The caps changelog.
//
// The consumer keeps the state of its per-key caps (one theoretical
// arrival time, TAT, per key and cap) in a compacted topic partitioned like
// the input: the state of input partition p is in changelog partition p
// (produce with LedgerPartitioner, the changelog as a manual topic), written in
// the same transaction as the outputs and offsets. One record per key:
//
//	key    source name (SourceName), 0x00, cap name, 0x00, the capped key
//	       (any bytes; topic and cap names hold no 0x00)
//	value  byte 0 major version = 1, byte 1 minor = 0, then the TAT in Unix
//	       nanoseconds as a zig-zag varint; bytes after it are skipped when
//	       minor > 0 and corrupt in 1.0
//	       nil (a tombstone): the key is absent (its state expired)
//
// LoadCaps reads a partition back.

const (
	capMajor = 1
	capMinor = 0
)

// CapTopic is the spec of the compacted caps changelog: like the stats
// topic, at least as many partitions as the largest input topic.
func CapTopic(name string, inputPartitions int32) TopicSpec {
	return TopicSpec{Name: name, Partitions: inputPartitions, Compact: true}
}

// CapRecord returns the changelog record of key under cap for source, in
// partition of topic: its TAT, or a tombstone when deleted.
func CapRecord(topic string, partition int32, source, cap string, key []byte, tat time.Time, deleted bool) *kgo.Record {
	k := make([]byte, 0, len(source)+len(cap)+len(key)+2)
	k = append(append(append(append(append(k, source...), 0), cap...), 0), key...)
	r := &kgo.Record{Topic: topic, Partition: partition, Key: k}
	if !deleted {
		v := make([]byte, 2, 2+binary.MaxVarintLen64)
		v[0], v[1] = capMajor, capMinor
		r.Value = binary.AppendVarint(v, tat.UnixNano())
	}
	return r
}

// ParseCapKey splits a changelog record key made by CapRecord. ok is false
// for a key of another layout.
func ParseCapKey(k []byte) (source, cap string, key []byte, ok bool) {
	i := bytes.IndexByte(k, 0)
	if i <= 0 {
		return "", "", nil, false
	}
	j := bytes.IndexByte(k[i+1:], 0)
	if j <= 0 {
		return "", "", nil, false
	}
	return string(k[:i]), string(k[i+1 : i+1+j]), k[i+2+j:], true
}

// DecodeCapValue returns the TAT of a changelog value (not a tombstone).
func DecodeCapValue(v []byte) (time.Time, error) {
	d := decoder{what: "cap state", b: v}
	minor := d.version(capMajor)
	tat := d.varint()
	if minor == 0 {
		d.end()
	}
	if d.err != nil {
		return time.Time{}, d.err
	}
	return time.Unix(0, tat), nil
}

// CapEntry is one record of the changelog, as LoadCaps reads it.
type CapEntry struct {
	Source, Cap string
	Key         []byte // valid only during the callback
	TAT         time.Time
	Deleted     bool // a tombstone: the key is absent
	// Err is set (a *RecordError) for a record whose value does not
	// decode: the caller skips it (the key keeps its state before it).
	Err error
}

// LoadCaps reads the changelog partitions of sources (each source name
// mapped to its changelog partition) from their start to the high
// watermarks they have when LoadCaps is called, with read_committed
// (waiting for transactions open then, as LoadLedgers does), and calls
// fn with every record of those sources in order; applying them in order
// rebuilds the committed state. A record whose value cannot be decoded is
// handed to fn with Err set, for the caller to count and skip: its key
// then keeps the state it had before (an older theoretical arrival time:
// the cap may let that key's burst through once more), and the partition
// runs. A cap bounds deliveries; it is not a counter the outputs must
// equal.
func LoadCaps(ctx context.Context, clientOpts []kgo.Opt, topic string, sources map[string]int32, fn func(CapEntry)) error {
	if topic == "" {
		return errInvalidConfig("empty caps topic")
	}
	if len(sources) == 0 {
		return nil
	}
	var parts []int32
	for s, p := range sources {
		if s == "" || p < 0 {
			return errInvalidConfig("source %q partition %d", s, p)
		}
		parts = append(parts, p)
	}
	return readToEnd(ctx, clientOpts, topic, "load caps", parts, func(r *kgo.Record) error {
		src, cp, key, ok := ParseCapKey(r.Key)
		if p, mine := sources[src]; !ok || !mine || p != r.Partition {
			return nil
		}
		e := CapEntry{Source: src, Cap: cp, Key: key, Deleted: r.Value == nil}
		if !e.Deleted {
			tat, err := DecodeCapValue(r.Value)
			if err != nil {
				e.Err = &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
			}
			e.TAT = tat
		}
		fn(e)
		return nil
	})
}
