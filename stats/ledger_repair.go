package stats

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Inspecting and repairing a source's ledger (`throttler ledger show` and
// `throttler ledger repair`, docs/operations.md).
//
// A worker restores a source from the newest record of every key of its
// ledger and parks the source when one of them is bad (LoadLedgers). The
// repair reads the whole stats partition instead, and of every key takes
// the newest good record: the one a bad record overwrote is still there
// until compaction removes it, and it is what the source's owner
// committed. The fold of those records is what the committed transactions
// wrote, without what the bad records added; a key whose only records
// are bad (its good one compacted away) is Lost. A repair then writes, in
// one transaction, a snapshot of that fold above every sequence readers
// have seen (so that it settles every View too) and the tombstones of the
// bad keys it does not overwrite.

// LedgerRecordInfo describes one record of a source's ledger, as a restore
// saw it (InspectLedger).
type LedgerRecordInfo struct {
	Part  LedgerPart
	Index uint32
	// Partition and Offset place the record in the stats topic.
	Partition int32
	Offset    int64
	Deleted   bool // a tombstone
	Bytes     int  // key and value
	// Seq, At, InputOffset and Entries are the record's header and its
	// number of entries, when it decodes.
	Seq         uint64
	At          time.Time
	InputOffset int64
	Entries     int
	// Problem is why a restore leaves the record out (nil: it folds it).
	Problem error
}

// LedgerInspection is what InspectLedger found of one source's ledger.
type LedgerInspection struct {
	Source string
	// End is the input partition's end offset checked against (-1: not
	// checked).
	End int64
	// Restore is what a worker restores (LoadLedgersWithin); its
	// Problems say why the worker parks the source.
	Restore LedgerState
	// Keys describes the newest record of every key, in offset order.
	Keys []LedgerRecordInfo
	// Repaired is the fold of the newest good record of every key: what
	// the committed transactions wrote, without the bad records.
	Repaired LedgerState
	// Lost are the bad keys without a good record in the partition:
	// nothing good was written under them, or compaction removed it, and
	// then what it held is not in Repaired. A heartbeat holds no
	// counter, only an offset; a snapshot chunk or a delta may hold
	// counters.
	Lost []LedgerRecordInfo
	// MaxSeq is the highest sequence of any record of the source that
	// decodes, but those within LedgerSeqReserve of the limit: a repair
	// writes above it.
	MaxSeq uint64
	// Whole says that Repaired is a whole ledger: a complete snapshot and
	// an unbroken chain of deltas after it. Every record the owner wrote
	// after its newest good one would then be newer than that one (its
	// input offset, Repaired.Offset, is the newest the good records
	// vouch for): when it is the group's committed offset, no lost key
	// held a newer counter than Repaired has.
	Whole bool
}

// InspectLedger reads the whole stats partition of source (with
// read_committed, to its end) and describes its ledger; end is the input
// partition's end offset (-1: not checked).
func InspectLedger(ctx context.Context, clientOpts []kgo.Opt, topic, source string, end int64) (*LedgerInspection, error) {
	reads, err := readLedgers(ctx, clientOpts, topic, []string{source}, true)
	if err != nil {
		return nil, err
	}
	rd := reads[source]
	in := &LedgerInspection{Source: source, End: end}
	in.Restore = rd.fold(source, end, &in.Keys)
	byOffset := make(map[int64]int, len(in.Keys)) // a key's newest record's stats offset -> its index in Keys
	for i, k := range in.Keys {
		byOffset[k.Offset] = i
	}
	var good []*kgo.Record
	var ents []rawEntry
	for _, recs := range rd.all {
		var pick *kgo.Record
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			ok := r.Value == nil
			if !ok {
				_, part, index, _ := parseLedgerKey(r.Key)
				var h ledgerHeader
				var err error
				if h, ents, err = decodeLedgerValue(part, index, r.Value, ents[:0]); err == nil {
					reachable := h.seq <= MaxLedgerSeq-LedgerSeqReserve
					if reachable {
						in.MaxSeq = max(in.MaxSeq, h.seq)
					}
					ok = reachable && (end < 0 || h.offset <= end)
				}
			}
			if ok && pick == nil {
				pick = r
			}
		}
		if pick != nil {
			good = append(good, pick)
		} else {
			in.Lost = append(in.Lost, in.Keys[byOffset[recs[len(recs)-1].Offset]])
		}
	}
	in.Repaired = foldRecs(source, good, end, nil)
	in.Whole = in.Repaired.Seq > 0 && !in.Repaired.layout.snapshotDue
	return in, nil
}

// RepairRecords returns the records that repair the source's ledger on
// topic, to produce in one transaction: a snapshot of Repaired with input
// offset offset (the group's committed offset of the partition, or
// Repaired.Offset), at a sequence above MaxSeq (unless that is within
// LedgerSeqReserve of the limit: then above Repaired.Seq), tombstoning
// the keys the snapshot makes obsolete; and the tombstones of the bad keys
// it does not overwrite.
func (in *LedgerInspection) RepairRecords(topic string, offset int64, now time.Time) ([]*kgo.Record, error) {
	st := in.Repaired
	st.Problems = nil
	st.Offset = offset
	st.layout.snapshotDue = true
	l, err := NewLedger(topic, st, in.MaxSeq)
	if err != nil {
		return nil, err
	}
	recs, err := l.Records(Changes{}, offset, now)
	if err != nil {
		return nil, err
	}
	written := map[string]bool{}
	for _, r := range recs {
		written[string(r.Key)] = true
	}
	for _, k := range in.Keys {
		if k.Problem == nil {
			continue
		}
		key, err := LedgerKey(in.Source, k.Part, k.Index)
		if err != nil {
			return nil, err
		}
		if !written[string(key)] {
			written[string(key)] = true
			recs = append(recs, l.record(key, nil))
		}
	}
	return recs, nil
}
