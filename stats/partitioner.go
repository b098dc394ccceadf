package stats

import "github.com/twmb/franz-go/pkg/kgo"

// LedgerPartitioner returns the kgo.Partitioner of a worker's producing
// client. It sends the ledger records (kind 5) of statsTopic to
// Record.Partition (Ledger sets it to the source's partition number) and
// the other records of statsTopic (definitions, worker statuses) with
// base's key hashing, so that every worker writes a given key to one
// partition; it sends the records of manualTopics (the caps changelogs,
// partitioned like the input) to Record.Partition, and partitions every
// other topic with base. An empty statsTopic leaves the stats topic to
// base too. A nil base means kgo's default partitioner,
// kgo.UniformBytesPartitioner(64<<10, true, true, nil), which hashes
// keyed records like the Java client (murmur2).
func LedgerPartitioner(base kgo.Partitioner, statsTopic string, manualTopics ...string) kgo.Partitioner {
	if base == nil {
		base = kgo.UniformBytesPartitioner(64<<10, true, true, nil)
	}
	m := make(map[string]struct{}, len(manualTopics))
	for _, t := range manualTopics {
		m[t] = struct{}{}
	}
	return &partitioner{base: base, manual: m, ledger: statsTopic}
}

type partitioner struct {
	base   kgo.Partitioner
	manual map[string]struct{}
	ledger string // the stats topic, "" for none
}

func (p *partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if _, ok := p.manual[t]; ok {
		return manualTopic{}
	}
	if t != "" && t == p.ledger {
		return &ledgerTopic{base: p.base.ForTopic(t)}
	}
	return p.base.ForTopic(t)
}

// ledgerTopic partitions ledger records by Record.Partition and the others
// with base, whose optional interfaces it passes through.
type ledgerTopic struct{ base kgo.TopicPartitioner }

func isLedgerKey(k []byte) bool { return len(k) > 0 && Kind(k[0]) == KindLedger }

func (l *ledgerTopic) RequiresConsistency(r *kgo.Record) bool {
	return isLedgerKey(r.Key) || l.base.RequiresConsistency(r)
}

func (l *ledgerTopic) Partition(r *kgo.Record, n int) int {
	if isLedgerKey(r.Key) {
		return int(r.Partition)
	}
	return l.base.Partition(r, n)
}

func (l *ledgerTopic) PartitionByBackup(r *kgo.Record, n int, it kgo.TopicBackupIter) int {
	if b, ok := l.base.(kgo.TopicBackupPartitioner); ok && !isLedgerKey(r.Key) {
		return b.PartitionByBackup(r, n, it)
	}
	return l.Partition(r, n)
}

func (l *ledgerTopic) OnNewBatch() {
	if b, ok := l.base.(kgo.TopicPartitionerOnNewBatch); ok {
		b.OnNewBatch()
	}
}

type manualTopic struct{}

func (manualTopic) RequiresConsistency(*kgo.Record) bool { return true }

// Partition returns the record's partition; kgo fails the record if it is
// out of range.
func (manualTopic) Partition(r *kgo.Record, _ int) int { return int(r.Partition) }
