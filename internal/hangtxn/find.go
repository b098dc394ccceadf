package hangtxn

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
