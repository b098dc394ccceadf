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
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Find returns the partitions of topics whose last stable offset a
// transaction holds that its coordinator does not have open, sorted by
// topic and partition; Decide looks up their outcomes. A transaction
// that ends between Find's requests can still be among them: a caller
// acts on one it finds again later (same Key).
func Find(ctx context.Context, cl *kgo.Client, scope Scope) ([]Hang, error) {
	adm := kadm.NewClient(cl)
	topics := make([]string, 0, len(scope))
	for t := range scope {
		topics = append(topics, t)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("stable offsets: %w", err)
	}
	held := kadm.TopicsSet{}
	var hangs []Hang
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := stable.Lookup(e.Topic, e.Partition)
		if e.Err != nil || !ok || s.Err != nil || s.Offset >= e.Offset || !scope.has(e.Topic, e.Partition) {
			return
		}
		held.Add(e.Topic, e.Partition)
		hangs = append(hangs, Hang{Topic: e.Topic, Partition: e.Partition, StableOffset: s.Offset, End: e.Offset})
	})
	if len(hangs) == 0 {
		return nil, nil
	}
	producers, err := adm.DescribeProducers(ctx, held)
	if err != nil {
		return nil, fmt.Errorf("describe producers: %w", err)
	}
	var pids []int64
	kept := hangs[:0]
	for _, h := range hangs {
		p, ok := openAt(producers, h)
		if !ok {
			continue // the transaction ended between the two reads
		}
		h.ProducerID, h.ProducerEpoch, h.CoordinatorEpoch = p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch
		kept = append(kept, h)
		pids = append(pids, p.ProducerID)
	}
	hangs = kept
	if len(hangs) == 0 {
		return nil, nil
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	txnOf := map[int64]string{}
	for _, t := range listed {
		txnOf[t.ProducerID] = t.TxnID
	}
	var ids []string
	for i := range hangs {
		hangs[i].TxnID = txnOf[hangs[i].ProducerID]
		if id := hangs[i].TxnID; id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil && len(ids) > 0 {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	kept = hangs[:0]
	for _, h := range hangs {
		d, ok := described[h.TxnID]
		if ok && d.Err == nil && stillOpen(d, h) {
			continue // the coordinator still works on it: not hanging
		}
		h.NowID, h.NowEpoch = -1, -1
		if ok && d.Err == nil {
			h.NowID, h.NowEpoch, h.NowState = d.ProducerID, d.ProducerEpoch, d.State
		}
		kept = append(kept, h)
	}
	hangs = kept
	sort.Slice(hangs, func(i, j int) bool {
		if hangs[i].Topic != hangs[j].Topic {
			return hangs[i].Topic < hangs[j].Topic
		}
		return hangs[i].Partition < hangs[j].Partition
	})
	return hangs, nil
}

// openAt returns the producer whose open transaction begins at h's last
// stable offset.
func openAt(producers kadm.DescribedProducersTopics, h Hang) (kadm.DescribedProducer, bool) {
	p, ok := producers[h.Topic].Partitions[h.Partition]
	if ok && p.Err == nil {
		for _, d := range p.ActiveProducers {
			if d.CurrentTxnStartOffset == h.StableOffset {
				return d, true
			}
		}
	}
	return kadm.DescribedProducer{}, false
}

// stillOpen reports whether the coordinator has h's transaction open: it
// names the partition in an ongoing or preparing transaction of h's
// producer.
func stillOpen(d kadm.DescribedTransaction, h Hang) bool {
	if !underWay(d.State) || d.ProducerID != h.ProducerID {
		return false
	}
	_, ok := d.Topics[h.Topic][h.Partition]
	return ok
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

// Complete writes the marker of every hang whose decision is known, and
// returns those it wrote. A partition's error (for instance
// CLUSTER_AUTHORIZATION_FAILED: writing markers takes the ClusterAction
// permission) is returned with the others'.
func Complete(ctx context.Context, cl *kgo.Client, hangs []Hang) ([]Hang, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	var todo []Hang
	for _, h := range hangs {
		if !h.Known {
			continue
		}
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = h.ProducerID, h.MarkerEpoch, h.Commit
		// The partition refuses a coordinator epoch below the last one it
		// saw from the producer; a higher one would fence the coordinator.
		m.CoordinatorEpoch = max(h.CoordinatorEpoch, 0)
		m.TransactionVersion = 2
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = h.Topic, []int32{h.Partition}
		m.Topics = append(m.Topics, t)
		req.Markers = append(req.Markers, m)
		todo = append(todo, h)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	type marker struct {
		topic     string
		partition int32
		pid       int64
	}
	failed := map[marker]bool{}
	var errs []error
	sharded := true
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			errs = append(errs, shard.Err)
			sharded = false // which partitions the shard held is not known
			continue
		}
		resp := shard.Resp.(*kmsg.WriteTxnMarkersResponse)
		for _, m := range resp.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						failed[marker{t.Topic, p.Partition, m.ProducerID}] = true
						errs = append(errs, fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err))
					}
				}
			}
		}
	}
	var done []Hang
	for _, h := range todo {
		if !failed[marker{h.Topic, h.Partition, h.ProducerID}] && sharded {
			done = append(done, h)
		}
	}
	return done, errors.Join(errs...)
}
