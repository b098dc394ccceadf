package pipeline

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/bytesconv"
)

// Records hands out output records and their headers from chunks of
// memory allocated together, for one goroutine (a partition's).
//
// A record of the pipeline lives from its event until the client's
// promise, some thousands of records later. Reused records (a sync.Pool)
// came back cold from the cache in that order, and each record's first
// touch, then the producer's walks over its headers (its size, its
// encoding, its promise), missed the cache: the bench's profile spent more
// there than in the records' encoding itself. Records taken in sequence
// from a chunk are written, encoded and dropped in sequence, which the
// processor's prefetching follows, and cost one allocation per chunk; a
// chunk is freed by the GC once the client dropped all of its records.
//
// The headers of a plain pass or reject (no source, stage, score or
// assignment headers) are the same for every record of a budget (and
// reason): those records share one slice (sharedHeaders), which the client
// only reads.
//
// The zero Records is ready to use.
type Records struct {
	recs   []kgo.Record
	hdrs   []kgo.RecordHeader
	shared sharedHeaders
}

// Chunk sizes of Records: records, and headers (about three a record).
const (
	recordsChunk = 128
	headersChunk = 4 * recordsChunk
)

// Output is OutputRecord with the record and its headers taken from rs's
// chunks, or its headers shared with the other plain records of its
// budget: they must not be modified. The record is the client's once
// produced: never reuse it.
func (rs *Records) Output(e *Event, o Outcome, scored bool) *kgo.Record {
	if len(rs.recs) == 0 {
		rs.recs = make([]kgo.Record, recordsChunk)
	}
	out := &rs.recs[0]
	rs.recs = rs.recs[1:]
	if h := rs.shared.of(e, o, scored); h != nil {
		return setOutput(out, h, e)
	}
	n := headerCount(e, o, scored)
	if n > headersChunk/4 {
		return fillOutput(out, make([]kgo.RecordHeader, 0, n), e, o, scored)
	}
	if len(rs.hdrs) < n {
		rs.hdrs = make([]kgo.RecordHeader, headersChunk)
	}
	h := rs.hdrs[:0:n]
	rs.hdrs = rs.hdrs[n:]
	return fillOutput(out, h, e, o, scored)
}

// sharedHeaders keeps the header slices of plain records: by budget for a
// pass (decision, budget), by reason and budget for a reject (decision,
// reason, budget), as fillOutput writes them. The last one used of each is
// at hand without a map lookup. Each map keeps two generations of at most
// maxSharedHeaders entries (headerCache), so that a partition that sees
// many budgets keeps a bounded number, and the budgets it sees often stay.
type sharedHeaders struct {
	pass     []kgo.RecordHeader // of the last pass
	reject   []kgo.RecordHeader // of the last reject
	byPass   headerCache[string]
	byReject headerCache[rejectHeaders]
}

type rejectHeaders struct{ reason, budget string }

const maxSharedHeaders = 1024

// of returns the shared headers of e's record, or nil when the record is
// not plain.
func (sh *sharedHeaders) of(e *Event, o Outcome, scored bool) []kgo.RecordHeader {
	if scored || len(e.Record.Headers) > 0 || len(e.Headers) > 0 {
		return nil
	}
	switch o {
	case OutcomePass:
		if len(e.Assignments) > 0 {
			return nil
		}
		if h := sh.pass; h != nil && bytesconv.String(h[1].Value) == e.Fields.Budget {
			return h
		}
		h := sh.byPass.get(e.Fields.Budget)
		if h == nil {
			b := []byte(e.Fields.Budget) // a copy: e's may be the record's bytes
			h = []kgo.RecordHeader{{Key: HeaderDecision, Value: valPass}, {Key: HeaderBudget, Value: b}}
			sh.byPass.put(bytesconv.String(b), h)
		}
		sh.pass = h
		return h
	case OutcomeReject:
		if h := sh.reject; h != nil && bytesconv.String(h[1].Value) == e.RejectReason && bytesconv.String(h[2].Value) == e.RejectedBy {
			return h
		}
		h := sh.byReject.get(rejectHeaders{e.RejectReason, e.RejectedBy})
		if h == nil {
			reason, budget := []byte(e.RejectReason), []byte(e.RejectedBy) // copies, as for a pass
			h = []kgo.RecordHeader{{Key: HeaderDecision, Value: valReject},
				{Key: HeaderReason, Value: reason}, {Key: HeaderBudget, Value: budget}}
			sh.byReject.put(rejectHeaders{bytesconv.String(reason), bytesconv.String(budget)}, h)
		}
		sh.reject = h
		return h
	}
	return nil
}

// headerCache maps keys to header slices in two generations: new entries
// go to the current one, and when it holds maxSharedHeaders it becomes the
// old one and the old one is dropped. A key found in the old generation
// moves to the current one. It thus keeps at most 2 × maxSharedHeaders
// entries, among them every key used since the last change of
// generation: a thousand budgets that come round often are not dropped
// together, as clearing one map when full would do.
//
// Each entry keeps the key it was put with, and a moved entry goes on
// under that key, not under the one it was looked up by: a lookup key may
// be a string over a record's bytes (a decoded budget), and a map key
// holding it would keep the whole fetch response that record came in
// alive as long as the entry lives.
type headerCache[K comparable] struct {
	cur, old map[K]headerEntry[K]
}

type headerEntry[K comparable] struct {
	key K
	h   []kgo.RecordHeader
}

// get returns the headers of k, or nil.
func (c *headerCache[K]) get(k K) []kgo.RecordHeader {
	if e, ok := c.cur[k]; ok {
		return e.h
	}
	e, ok := c.old[k]
	if ok {
		c.put(e.key, e.h)
	}
	return e.h
}

// put adds k's headers to the current generation; k must own its memory.
func (c *headerCache[K]) put(k K, h []kgo.RecordHeader) {
	if c.cur == nil {
		c.cur = make(map[K]headerEntry[K])
	} else if len(c.cur) >= maxSharedHeaders {
		c.old, c.cur = c.cur, c.old
		if c.cur == nil {
			c.cur = make(map[K]headerEntry[K], maxSharedHeaders)
		} else {
			clear(c.cur)
		}
	}
	c.cur[k] = headerEntry[K]{k, h}
}
