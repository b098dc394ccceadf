package consumer

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Polling ahead.
//
// kgo fetches all of a broker's partitions in one request and buffers one
// response per broker: it sends the next request only once the buffered
// response has been polled whole, and decoding a response (decompressing
// and parsing every record) takes its fetch goroutine tens of
// milliseconds when it is large (about a megabyte a partition). A loop
// that polled DefaultMaxPollRecords at a time would stop for that long at
// every response, its partitions idle: in `throttler bench` a third of the
// worker's time. The loop instead takes every buffered record whenever its
// own queue is empty, so that kgo fetches and decodes the next response
// while the partitions process the queue, and still dispatches at most
// DefaultMaxPollRecords a poll: units of work keep their size and cadence. At
// most one response waits in the queue beside the one kgo buffers.
//
// Queued records are polled but not processed, and kgo commits the
// offsets after the last polled record: every unit of work names, for each
// partition dispatched since the last commit or still queued, the offset
// after its last dispatched record, that is its first queued one (as the
// offsets of delay budgets are named: overrideTxnOffsets, plainSession.end).
// A transaction that commits leaves kgo believing it committed up to what
// it polled, and one that aborts rewinds the client to that belief; after
// an abort the partitions that were queued at the last commit are rewound
// to what was committed for them, and the queue is dropped.
type pollAhead struct {
	queue []queued
	// next is the offset after the last record dispatched since the last
	// commit, by partition.
	next map[topicPartition]kgo.EpochOffset
	// behind are the partitions whose committed offset, at the last
	// commit, was behind what kgo had polled: their first queued record.
	behind map[string]map[int32]kgo.EpochOffset
}

// queued is one partition's polled records not dispatched yet, for the
// partition p that owned it when they were polled.
type queued struct {
	tp   topicPartition
	p    *partition
	recs []*kgo.Record
	hwm  int64
}

// fill polls every buffered record (waiting until ctx ends for some) and
// queues them. It returns false when the client is closed.
func (w *Worker) fill(ctx context.Context) bool {
	fs := w.sess.poll(ctx, -1)
	if fs.IsClientClosed() {
		return false
	}
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		w.log.Warn().Err(err).Str("topic", t).Int32("partition", p).Msg("fetch error")
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) == 0 {
			return
		}
		tp := topicPartition{ftp.Topic, ftp.Partition}
		if p := w.parts[tp]; p != nil { // else fetched before a revoke took effect
			w.ahead.queue = append(w.ahead.queue, queued{tp: tp, p: p, recs: ftp.Records, hwm: ftp.HighWatermark})
		}
	})
	return true
}

// dispatch hands up to limit queued records to their partitions'
// goroutines and returns their number. Records of a partition no longer
// owned by the one that was when they were polled are dropped: its next
// owner reads them from the committed offset.
func (w *Worker) dispatch(limit int) int {
	n := 0
	now := w.cfg.now()
	a := &w.ahead
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(a.queue) > 0 && n < limit {
		q := &a.queue[0]
		take := min(len(q.recs), limit-n)
		recs := q.recs[:take:take]
		q.recs = q.recs[take:]
		p := q.p
		tp, hwm := q.tp, q.hwm
		if len(q.recs) == 0 {
			a.queue[0] = queued{}
			a.queue = a.queue[1:]
		}
		if w.parts[tp] != p {
			continue
		}
		last := recs[len(recs)-1]
		if a.next == nil {
			a.next = map[topicPartition]kgo.EpochOffset{}
		}
		a.next[tp] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
		p.lagRecords = max(hwm-last.Offset-1, 0)
		p.lag.Set(float64(p.lagRecords))
		n += len(recs)
		w.inflight.Add(1)
		p.in <- batch{recs: recs, now: now}
	}
	return n
}

// forget drops what the queue and the unit of work hold of tp: its
// partition was replaced, and the client rewound to its committed offset.
func (a *pollAhead) forget(tp topicPartition) {
	delete(a.next, tp)
	if m := a.behind[tp.topic]; m != nil {
		delete(m, tp.partition)
	}
	kept := a.queue[:0]
	for _, q := range a.queue {
		if q.tp != tp {
			kept = append(kept, q)
		}
	}
	clear(a.queue[len(kept):])
	a.queue = kept
}

// queuedFirst returns the first queued record's offset of each partition
// with queued records, nil when none.
func (a *pollAhead) queuedFirst() map[string]map[int32]kgo.EpochOffset {
	var out map[string]map[int32]kgo.EpochOffset
	for _, q := range a.queue {
		if _, ok := out[q.tp.topic][q.tp.partition]; !ok {
			r := q.recs[0]
			out = setOffset(out, q.tp, kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset})
		}
	}
	return out
}

// commitOffsets returns the offsets the unit of work must commit instead
// of kgo's: those of the partitions dispatched since the last commit or
// still queued, then held's (delay budgets), which win. nil when none.
func (a *pollAhead) commitOffsets(held map[string]map[int32]kgo.EpochOffset) map[string]map[int32]kgo.EpochOffset {
	var out map[string]map[int32]kgo.EpochOffset
	for tp, eo := range a.next {
		out = setOffset(out, tp, eo)
	}
	out = mergeOffsets(out, a.queuedFirst()) // a queued partition's next is its first queued
	return mergeOffsets(out, held)
}

// ended settles the queue after the unit of work ended and returns the
// offsets to rewind the client to (nil for none). Committed, what was
// dispatched is committed and the queued partitions are behind kgo's
// belief; held are the partitions the delay budgets rewind (applyHolds),
// whose queued records go, to be read again. Aborted, kgo rewound the
// client to its belief: the partitions behind it must go further back,
// and the queue goes.
func (a *pollAhead) ended(committed bool, held map[string]map[int32]kgo.EpochOffset) (rewind map[string]map[int32]kgo.EpochOffset) {
	clear(a.next)
	if !committed {
		rewind = a.behind
		a.queue, a.behind = nil, nil
		return rewind
	}
	if len(held) > 0 {
		kept := a.queue[:0]
		for _, q := range a.queue {
			if _, ok := held[q.tp.topic][q.tp.partition]; !ok {
				kept = append(kept, q)
			}
		}
		clear(a.queue[len(kept):])
		a.queue = kept
	}
	a.behind = a.queuedFirst()
	return nil
}

// mergeOffsets sets every offset of add in m, making the maps it needs,
// and returns m.
func mergeOffsets(m, add map[string]map[int32]kgo.EpochOffset) map[string]map[int32]kgo.EpochOffset {
	for t, ps := range add {
		for id, eo := range ps {
			m = setOffset(m, topicPartition{t, id}, eo)
		}
	}
	return m
}

// setOffset sets m[tp] to eo, making the maps it needs, and returns m.
func setOffset(m map[string]map[int32]kgo.EpochOffset, tp topicPartition, eo kgo.EpochOffset) map[string]map[int32]kgo.EpochOffset {
	if m == nil {
		m = map[string]map[int32]kgo.EpochOffset{}
	}
	if m[tp.topic] == nil {
		m[tp.topic] = map[int32]kgo.EpochOffset{}
	}
	m[tp.topic][tp.partition] = eo
	return m
}
