package stats

import "github.com/twmb/franz-go/pkg/kgo"

// Partitioner returns a kgo.Partitioner that sends records of the manual
// topics to the partition set in Record.Partition, and partitions records of
// every other topic with base.
//
// Use it on the consumer's producing client with the checkpoint topic as a
// manual topic, so that CheckpointRecord lands in the partition of its
// input partition, while outputs and stats records keep hashing by key. A
// nil base means kgo's default partitioner,
// kgo.UniformBytesPartitioner(64<<10, true, true, nil), which hashes keyed
// records like the Java client (murmur2).
func Partitioner(base kgo.Partitioner, manualTopics ...string) kgo.Partitioner {
	if base == nil {
		base = kgo.UniformBytesPartitioner(64<<10, true, true, nil)
	}
	m := make(map[string]struct{}, len(manualTopics))
	for _, t := range manualTopics {
		m[t] = struct{}{}
	}
	return &partitioner{base: base, manual: m}
}

type partitioner struct {
	base   kgo.Partitioner
	manual map[string]struct{}
}

func (p *partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if _, ok := p.manual[t]; ok {
		return manualTopic{}
	}
	return p.base.ForTopic(t)
}

type manualTopic struct{}

func (manualTopic) RequiresConsistency(*kgo.Record) bool { return true }

// Partition returns the record's partition; kgo fails the record if it is
// out of range.
func (manualTopic) Partition(r *kgo.Record, _ int) int { return int(r.Partition) }
