package stats

import "time"

// Folding ledger records.
//
// A reader keeps, per (source, entry), the value of the highest sequence
// it has seen, and per source:
//
//   - the sequence, instant and offset of the newest record (the highest
//     sequence, snapshot, delta or heartbeat): the instant is what the
//     source's owner vouches for, the offset is where its counters stand;
//   - the floor: the sequence of the newest snapshot of which it has seen
//     every chunk. A snapshot holds every entry of the source, so once one
//     is complete, an entry of a lower sequence is one that left the
//     ledger (dropped, or a leftover of an older chain): the reader drops
//     it, and ignores entries below the floor from then on.
//
// Neither rule depends on the order of the records, and compaction only
// removes records whose key has a newer one, so the fold of a compacted
// partition equals the fold of the whole of it. A dropped entry (types 3
// and 4) is removed when its sequence is above the entry's; that one rule
// relies on the order of the records (a reader never meets an older value
// of the entry after the drop in a partition's offset order), and the next
// complete snapshot settles it in any order.

// ledgerHead is the per-source part of a fold, besides the entries.
type ledgerHead struct {
	seq    uint64
	at     time.Time
	offset int64
	floor  uint64
	// partial are the snapshots above floor not yet complete, by
	// sequence: the chunks seen.
	partial map[uint64]*partialSnapshot
}

type partialSnapshot struct {
	chunks uint32
	seen   map[uint32]struct{}
}

// maxPartial bounds the incomplete snapshots a fold tracks per source (a
// writer leaves at most one or two behind; more only with foreign data).
const maxPartial = 8

// apply folds a record's header. use says whether the record's entries
// count (its sequence is not below the floor); completed is the sequence
// of the snapshot this chunk completed, 0 if none: the caller then drops
// the entries below it.
func (h *ledgerHead) apply(part LedgerPart, index uint32, hd *ledgerHeader) (use bool, completed uint64) {
	if hd.seq > h.seq {
		h.seq, h.at, h.offset = hd.seq, hd.at, hd.offset
	}
	if hd.seq < h.floor {
		return false, 0
	}
	if part != LedgerSnapshot || hd.seq == h.floor {
		return true, 0
	}
	p := h.partial[hd.seq]
	if p == nil || p.chunks != hd.chunks {
		if h.partial == nil {
			h.partial = map[uint64]*partialSnapshot{}
		}
		if len(h.partial) >= maxPartial {
			h.dropOldestPartial()
		}
		p = &partialSnapshot{chunks: hd.chunks, seen: map[uint32]struct{}{}}
		h.partial[hd.seq] = p
	}
	p.seen[index] = struct{}{}
	if uint32(len(p.seen)) < p.chunks {
		return true, 0
	}
	h.floor = hd.seq
	for s := range h.partial {
		if s <= h.floor {
			delete(h.partial, s)
		}
	}
	return true, hd.seq
}

func (h *ledgerHead) dropOldestPartial() {
	var oldest uint64
	for s := range h.partial {
		if oldest == 0 || s < oldest {
			oldest = s
		}
	}
	delete(h.partial, oldest)
}

// ledgerLayout is how the keys of one source's ledger stand: what its
// writer needs to continue the chain and to tombstone obsolete keys.
type ledgerLayout struct {
	chunks     uint32 // the newest snapshot's chunks: S_0 .. S_chunks-1
	liveChunks uint32 // chunk keys that may hold a value: S_0 .. S_liveChunks-1
	snapBytes  int    // bytes (keys and values) of the newest snapshot
	chain      uint32 // deltas since that snapshot: D_0 .. D_chain-1
	chainBytes int    // their bytes
	liveDeltas uint32 // delta keys that may hold a value: D_0 .. D_liveDeltas-1
	// snapshotDue makes the next write a snapshot: there is none yet, or
	// what was read does not form a chain this writer can continue.
	snapshotDue bool
	// strays are keys a restore saw holding a value beyond a gap (a
	// chunk or delta number above the count of keys of its part), which
	// no writer of this design leaves: the next snapshot tombstones each
	// of them instead of every number below it, so that what it writes
	// follows the keys that exist, not the numbers they carry.
	strays []strayKey
}

// strayKey is one key of strays.
type strayKey struct {
	part  LedgerPart
	index uint32
}

// layoutKey is the newest record of one key, as a restore saw it.
type layoutKey struct {
	seq   uint64
	bytes int
	live  bool // false: a tombstone
}

// layoutOf derives the layout from the newest record of every chunk and
// delta key of a source, and the source's floor. It costs O(keys), whatever
// numbers the keys carry.
func layoutOf(chunks, deltas map[uint32]layoutKey, floor uint64, snapChunks uint32) ledgerLayout {
	var l ledgerLayout
	for i, k := range chunks {
		switch {
		case !k.live:
		case i >= uint32(len(chunks)):
			l.strays = append(l.strays, strayKey{LedgerSnapshot, i})
		default:
			l.liveChunks = max(l.liveChunks, i+1)
		}
		if k.live && k.seq == floor && i < snapChunks {
			l.snapBytes += k.bytes
			l.chunks++
		}
	}
	for i, k := range deltas {
		switch {
		case !k.live:
		case i >= uint32(len(deltas)):
			l.strays = append(l.strays, strayKey{LedgerDelta, i})
		default:
			l.liveDeltas = max(l.liveDeltas, i+1)
		}
		if k.live && k.seq > floor {
			l.chainBytes += k.bytes
			l.chain = max(l.chain, i+1)
		}
	}
	// The chain must be D_0 .. D_chain-1 exactly, after a complete
	// snapshot: it cannot be when it is longer than the delta keys.
	contiguous := l.chain <= uint32(len(deltas))
	for i := uint32(0); contiguous && i < l.chain; i++ {
		if k := deltas[i]; !k.live || k.seq <= floor {
			contiguous = false
		}
	}
	l.snapshotDue = floor == 0 || l.chunks != snapChunks || !contiguous || len(l.strays) > 0
	return l
}
