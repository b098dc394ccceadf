package pipeline

import (
	"strconv"
	"strings"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/bytesconv"
)

// StageDedup names the duplicate-id stage (see DedupStage).
const StageDedup = "dedup"

// ReasonDuplicateID: the event's id was seen earlier in the same
// partition, within the dedup window.
const ReasonDuplicateID decode.Reason = "duplicate_id"

// DedupStage dead-letters an event whose id (Decoded.ID, from IDPath) was
// already seen at an earlier offset of the same partition, among the last
// window distinct ids of that partition (ReasonDuplicateID; the detail
// names the first offset). Events without an id pass.
//
// The window is per partition because producers' retries and replays land
// on the partition of the first copy. It is bounded: each partition keeps
// at most window ids (the oldest go first), about 60 bytes plus the id's
// length each; an id longer than MaxStateKeyBytes is kept as its digest
// (StateKey). It lives in memory only: after a restart or a partition
// move the new owner starts with an empty window, so a duplicate of an
// event processed before the move is not caught.
//
// It is exact under rewinds: an id remembers the offset of its first copy,
// and a record is a duplicate only if that offset is earlier than its own.
// After an aborted transaction the partition replays the same records at
// the same offsets, so the first copy passes again and the later copies
// are refused again.
//
// Each partition has its window, made when the stage is built for the
// partition and dropped with it.
func DedupStage(window int) Stage {
	return Stage{Name: StageDedup, New: func(*Partition) (Middleware, error) {
		w := newDedupWindow(window)
		return func(next Handler) Handler {
			return func(e *Event) Outcome {
				id := e.Fields.ID
				if id == "" {
					return next(e)
				}
				if len(id) > MaxStateKeyBytes {
					id = string(StateKey(bytesconv.Bytes(id)))
				}
				if first, dup := w.see(id, e.Record.Offset); dup {
					return e.DeadLetter(recErr(StageDedup, ReasonDuplicateID, "", "first seen at offset "+strconv.FormatInt(first, 10)))
				}
				return next(e)
			}
		}, nil
	}}
}

// dedupWindow is the last ids of one partition and the offsets of their
// first copies.
type dedupWindow struct {
	first map[string]int64
	ring  []string // ids in the order they came; ring[next] goes next
	next  int
	size  int
}

func newDedupWindow(size int) *dedupWindow {
	return &dedupWindow{first: make(map[string]int64, min(size, 1<<16)), ring: make([]string, 0, min(size, 1<<16)), size: size}
}

// see records id at offset and reports whether it is a duplicate, with
// the offset of the first copy.
func (w *dedupWindow) see(id string, offset int64) (first int64, dup bool) {
	if at, ok := w.first[id]; ok {
		if at < offset {
			return at, true
		}
		w.first[id] = offset // a replay from before the first copy
		return offset, false
	}
	id = strings.Clone(id) // Decoded strings share the record's memory
	if len(w.ring) < w.size {
		w.ring = append(w.ring, id)
	} else {
		delete(w.first, w.ring[w.next])
		w.ring[w.next] = id
		w.next = (w.next + 1) % len(w.ring)
	}
	w.first[id] = offset
	return offset, false
}
