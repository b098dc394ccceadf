package hangtxn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is Kafka's consumer offsets topic. A transaction commits a
// group's offsets in the partition GroupPartition names; a marker missing
// there leaves the group's offsets pending, and its consumers waiting for
// them (they fetch offsets that are stable).
const OffsetsTopic = "__consumer_offsets"

// GroupPartition returns the partition of the consumer offsets topic that
// holds group's offsets, as Kafka places it.
func GroupPartition(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	n, err := partitionCount(ctx, cl, OffsetsTopic)
	if err != nil {
		return 0, err
	}
	return keyPartition(group, n), nil
}

// Decide looks up, in the transaction state topic, the coordinator's
// decision for each hang and fills Known, Commit and MarkerEpoch (or
// Why). It reads the topic with a client of its own made from opts (the
// connection options of cl, without consumer or producer roles).
func Decide(ctx context.Context, cl *kgo.Client, opts []kgo.Opt, hangs []Hang) error {
	byPart := map[int32][]int{}
	var n int32
	for i, h := range hangs {
		if h.TxnID == "" {
			hangs[i].Why = "no coordinator knows producer " + fmt.Sprint(h.ProducerID)
			continue
		}
		if n == 0 {
			var err error
			if n, err = partitionCount(ctx, cl, StateTopic); err != nil {
				for j := range hangs {
					hangs[j].Why = err.Error()
				}
				return err
			}
		}
		p := keyPartition(h.TxnID, n)
		byPart[p] = append(byPart[p], i)
	}
	for p, idx := range byPart {
		records, err := readState(ctx, opts, p)
		if err != nil {
			for _, i := range idx {
				hangs[i].Why = err.Error()
			}
			return err
		}
		for _, i := range idx {
			decide(&hangs[i], records)
		}
	}
	offsetsEnded(hangs)
	return nil
}

// offsetsEnded takes back the decision of a transaction that committed a
// group's offsets when that offsets partition is no longer among the
// hangs: something ended the transaction there already, and not
// necessarily as its coordinator decided — a later transaction of the
// same producer that reaches a partition still open ends it with its own
// outcome (an abort, after the outage that dropped the markers). The
// group's offsets decide whether the transaction's inputs are read again,
// so its other partitions cannot safely be ended either way.
func offsetsEnded(hangs []Hang) {
	type txn struct {
		topic     string
		partition int32
		pid       int64
		epoch     int16
	}
	open := map[txn]bool{}
	for _, h := range hangs {
		open[txn{h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch}] = true
	}
	for i, h := range hangs {
		if !h.Known && !h.Wait {
			continue
		}
		for _, p := range h.offsets {
			if !open[txn{OffsetsTopic, p, h.ProducerID, h.ProducerEpoch}] {
				hangs[i].Known, hangs[i].Wait = false, false
				hangs[i].Why = fmt.Sprintf("its group offsets (%s/%d) were ended already, perhaps by a later transaction", OffsetsTopic, p)
				break
			}
		}
	}
}

// The states of the transaction state topic's values that carry a
// coordinator's decision (kmsg.TxnMetadataValue.State).
const (
	prepareCommit kmsg.TransactionState = 2
	prepareAbort  kmsg.TransactionState = 3
)

// stateRecord is one value of the transaction state topic.
type stateRecord struct {
	txnID string
	v     kmsg.TxnMetadataValue
}

// decide finds h's transaction among the state records: the last
// PrepareCommit or PrepareAbort of h's producer that names h's partition
// with the epoch one above the records' (transactions v2 bump the epoch
// when they end; v1 transactions reuse theirs, so they cannot be told
// apart and are left undecided).
func decide(h *Hang, records []stateRecord) {
	h.Why = "no PrepareCommit or PrepareAbort of it in " + StateTopic
	for _, r := range slices.Backward(records) {
		v := r.v
		if r.txnID != h.TxnID || v.ProducerID != h.ProducerID || v.ProducerEpoch != h.ProducerEpoch+1 {
			continue
		}
		if v.State != prepareCommit && v.State != prepareAbort {
			continue
		}
		if !names(v, h.Topic, h.Partition) {
			continue
		}
		if v.ClientTransactionVersion < 2 {
			h.Why = "a transactions-v1 producer"
			return
		}
		h.offsets = nil
		for _, t := range v.Topics {
			if t.Topic == OffsetsTopic {
				h.offsets = append(h.offsets, t.Partitions...)
			}
		}
		if h.NowID == h.ProducerID && h.NowEpoch <= v.ProducerEpoch && underWay(h.NowState) {
			h.Wait, h.Why = true, fmt.Sprintf("its producer's next transaction is %s at epoch %d", h.NowState, h.NowEpoch)
			return
		}
		h.Known, h.Commit, h.MarkerEpoch, h.Why = true, v.State == prepareCommit, v.ProducerEpoch, ""
		return
	}
}

// underWay reports whether a coordinator's transaction state is one of a
// transaction not ended yet.
func underWay(state string) bool {
	switch state {
	case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return true
	}
	return false
}

func names(v kmsg.TxnMetadataValue, topic string, partition int32) bool {
	for _, t := range v.Topics {
		if t.Topic == topic && slices.Contains(t.Partitions, partition) {
			return true
		}
	}
	return false
}

// partitionCount returns the partition count of one of Kafka's internal
// topics.
func partitionCount(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	d, ok := md.Topics[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("metadata of %s: %v", topic, errors.Join(errors.New("no partitions"), d.Err))
	}
	return int32(len(d.Partitions)), nil
}

// keyPartition is the partition of one of Kafka's internal topics, of n
// partitions, that holds key (a transactional id, a group):
// Utils.abs(key.hashCode()) % n, where hashCode is Java's String hash over
// UTF-16 code units and Utils.abs is Math.abs but for the smallest int,
// whose absolute value it takes as 0.
func keyPartition(key string, n int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	switch {
	case h == math.MinInt32:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

// readTimeout bounds one read of a state partition.
const readTimeout = 30 * time.Second

// readState reads partition p of the transaction state topic from its
// start to its current end.
func readState(ctx context.Context, opts []kgo.Opt, p int32) ([]stateRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	cl, err := kgo.NewClient(append(slices.Clip(opts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{StateTopic: {p: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, StateTopic)
	if err != nil {
		return nil, fmt.Errorf("end of %s: %w", StateTopic, err)
	}
	end, ok := ends.Lookup(StateTopic, p)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("end of %s/%d: %v", StateTopic, p, end.Err)
	}
	var out []stateRecord
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s/%d: %w", StateTopic, p, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("reading %s: %w", StateTopic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var k kmsg.TxnMetadataKey
			if r.Value == nil || k.ReadFrom(r.Key) != nil {
				return
			}
			var v kmsg.TxnMetadataValue
			if v.ReadFrom(r.Value) != nil {
				return
			}
			out = append(out, stateRecord{txnID: k.TransactionalID, v: v})
		})
	}
	return out, nil
}
