package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/throttler/throttler/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

// reader reads topics from their start, keeping control records so that
// it can tell when it has read a partition to a given end offset (the
// last offset of a partition is often a transaction marker).
type reader struct {
	cl   *kgo.Client
	adm  *kadm.Client
	last map[tp]int64 // the last offset seen, control records included
}

func newReader(opts []kgo.Opt, committed bool, topics ...string) (*reader, error) {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...),
		kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(8<<20))...)
	if err != nil {
		return nil, err
	}
	return &reader{cl: cl, adm: kadm.NewClient(cl), last: map[tp]int64{}}, nil
}

func (r *reader) close() { r.cl.Close() }

// poll fetches once and calls fn with each data record.
func (r *reader) poll(ctx context.Context, fn func(*kgo.Record)) {
	fs := r.cl.PollFetches(ctx)
	fs.EachRecord(func(rec *kgo.Record) {
		r.last[tp{rec.Topic, rec.Partition}] = rec.Offset
		if !rec.Attrs.IsControl() {
			fn(rec)
		}
	})
}

// ends returns the end offset of every non-empty partition of topics
// (topics that do not exist have none).
func (r *reader) ends(ctx context.Context, topics ...string) (map[tp]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	details, err := r.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	topics = topics[:0:0]
	for t, d := range details {
		if d.Err == nil {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return map[tp]int64{}, nil
	}
	// A partition that answers with an error (a broker under load) is
	// asked again until the deadline: skipped, its records would read as
	// lost.
	for {
		out, err := r.listEnds(ctx, topics)
		if err == nil {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listEnds is one try of ends on existing topics.
func (r *reader) listEnds(ctx context.Context, topics []string) (map[tp]int64, error) {
	starts, err := r.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	ends, err := r.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := starts.Lookup(o.Topic, o.Partition)
		switch {
		case err != nil:
		case o.Err != nil:
			err = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
		case !ok:
			err = fmt.Errorf("start offset of %s/%d: not listed", o.Topic, o.Partition)
		case s.Err != nil:
			err = fmt.Errorf("start offset of %s/%d: %w", o.Topic, o.Partition, s.Err)
		case o.Offset > s.Offset:
			out[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	return out, err
}

// reached reports whether every partition of ends was read to its end.
func (r *reader) reached(ends map[tp]int64) bool {
	for p, end := range ends {
		if last, ok := r.last[p]; !ok || last < end-1 {
			return false
		}
	}
	return true
}

// readAll reads topics from their start to their end offsets of now,
// calling fn with each data record; committed reads only committed
// records. It gives up after timeout.
func readAll(ctx context.Context, opts []kgo.Opt, committed bool, timeout time.Duration, fn func(*kgo.Record), topics ...string) error {
	r, err := newReader(opts, committed, topics...)
	if err != nil {
		return err
	}
	defer r.close()
	ends, err := r.ends(ctx, topics...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !r.reached(ends) {
		if ctx.Err() != nil {
			return fmt.Errorf("reading %v to its end: %w", topics, ctx.Err())
		}
		r.poll(ctx, fn)
	}
	return nil
}

// Volume is what a topic holds: records and their key and value bytes.
type Volume struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Largest is the key and value bytes of the largest record.
	Largest int64 `json:"largest_record_bytes"`
}

func (v *Volume) add(rec *kgo.Record) {
	n := int64(len(rec.Key) + len(rec.Value))
	v.Records++
	v.Bytes += n
	v.Largest = max(v.Largest, n)
}

// volumes reads topics whole, aborted records included, and returns
// what each holds, and what the stats topic holds of each record kind
// (by the kind's name: budget definitions, ledgers, worker statuses).
func volumes(ctx context.Context, opts []kgo.Opt, timeout time.Duration, topics ...string) (byTopic, byKind map[string]Volume, err error) {
	byTopic, byKind = make(map[string]Volume, len(topics)), map[string]Volume{}
	for _, t := range topics {
		byTopic[t] = Volume{}
	}
	err = readAll(ctx, opts, false, timeout, func(rec *kgo.Record) {
		v := byTopic[rec.Topic]
		v.add(rec)
		byTopic[rec.Topic] = v
		if rec.Topic == statsTopic && len(rec.Key) > 0 {
			k := stats.Kind(rec.Key[0]).String()
			v := byKind[k]
			v.add(rec)
			byKind[k] = v
		}
	}, topics...)
	return byTopic, byKind, err
}
