// Package hangtxn finds transactions that hold a partition's last stable
// offset although their coordinator has finished them, and writes the
// markers the coordinator decided.
//
// Kafka's transaction coordinator drops the markers of a partition whose
// leader it does not know when it sends them ("these partitions are
// likely deleted already and hence can be skipped"), and then logs the
// transaction complete. A single broker that restarts while a commit's
// markers are in flight meets that: it reloads the PrepareCommit before
// its metadata names the partitions' leaders again. The partition keeps
// an open transaction nobody ends, and every read_committed reader of it
// waits forever (docs/kafka-notes.md).
//
// The outcome of such a transaction is known: the coordinator logged it
// (PrepareCommit or PrepareAbort, with the partition in its list) in the
// transaction state topic before it sent a single marker. Find reads that
// record; Complete writes the marker it implies, with the epoch the
// coordinator would have used. A transaction whose record is not found
// (compacted away, or written by a transactions-v1 producer, whose epoch
// does not tell one transaction from the next) is reported, never
// guessed.
package hangtxn

import (
	"fmt"
	"slices"
)

// StateTopic is Kafka's transaction state topic.
const StateTopic = "__transaction_state"

// Hang is a partition whose last stable offset an open transaction holds
// that its coordinator no longer has open.
type Hang struct {
	Topic     string
	Partition int32
	// StableOffset is the partition's last stable offset: the first
	// offset of the open transaction.
	StableOffset int64
	// End is the partition's high watermark.
	End int64
	// ProducerID and ProducerEpoch are those of the transaction's records.
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the coordinator epoch the partition last saw
	// from this producer (-1: none).
	CoordinatorEpoch int32
	// TxnID is the producer's transactional ID ("" when no coordinator
	// knows the producer ID any more).
	TxnID string
	// NowID, NowEpoch and NowState are the producer ID, epoch and
	// transaction state the coordinator has for TxnID now.
	NowID    int64
	NowEpoch int16
	NowState string
	// Known reports whether the coordinator's decision was found and the
	// marker can be written; Commit and MarkerEpoch are meaningful only
	// then.
	Known       bool
	Commit      bool
	MarkerEpoch int16
	// Wait reports a decision found whose marker must wait: the
	// producer's next transaction is under way at the marker's epoch, and
	// its records (which carry that epoch) could join the open one on the
	// partition before the marker ends it. It ends (commit, abort or
	// timeout) with the epoch bumped past the marker's.
	Wait bool
	// Why says, when the decision was not found, why not.
	Why string
	// offsets are the consumer offsets partitions the decided transaction
	// committed offsets in.
	offsets []int32
}

func (h Hang) String() string {
	s := fmt.Sprintf("%s/%d: transaction of producer %d epoch %d open at %d (end %d)",
		h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch, h.StableOffset, h.End)
	if h.TxnID != "" {
		s += fmt.Sprintf(", transactional id %q", h.TxnID)
	}
	switch {
	case h.Known && h.Commit:
		s += ", committed by its coordinator"
	case h.Known:
		s += ", aborted by its coordinator"
	case h.Wait:
		s += ", decided by its coordinator; waiting: " + h.Why
	default:
		s += ", outcome unknown: " + h.Why
	}
	return s
}

// Key identifies one hanging transaction on one partition.
func (h Hang) Key() string {
	return fmt.Sprintf("%s/%d/%d/%d/%d", h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch, h.StableOffset)
}

// Scope is what Find looks at: topics, each with the partitions to look
// at, or nil for all of them.
type Scope map[string][]int32

func (s Scope) has(topic string, partition int32) bool {
	ps, ok := s[topic]
	return ok && (ps == nil || slices.Contains(ps, partition))
}
