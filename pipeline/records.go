package pipeline

import "github.com/twmb/franz-go/pkg/kgo"

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
// The zero Records is ready to use.
type Records struct {
	recs []kgo.Record
	hdrs []kgo.RecordHeader
}

// Chunk sizes of Records: records, and headers (about three a record).
const (
	recordsChunk = 128
	headersChunk = 4 * recordsChunk
)

// Output is OutputRecord with the record and its headers taken from rs's
// chunks. The record is the client's once produced: never reuse it.
func (rs *Records) Output(e *Event, o Outcome, scored bool) *kgo.Record {
	if len(rs.recs) == 0 {
		rs.recs = make([]kgo.Record, recordsChunk)
	}
	out := &rs.recs[0]
	rs.recs = rs.recs[1:]
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
