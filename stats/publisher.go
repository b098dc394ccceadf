package stats

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// Publisher makes the stats-topic records that are not a ledger's: the
// definitions (BudgetRecord, ExperimentRecord, DefinitionRecords), a
// worker's status (WorkerRecord) and tombstones (TombstoneKey). The
// ledger records come from a Ledger.
//
// Records are keyed by their identity and carry no partition: produce them
// with a key-hashing partitioner (kgo's default, or LedgerPartitioner with
// a nil base) so that every worker writes a given key to the same
// partition. Mixing partitioners across workers would split a key over two
// partitions, and "newest record wins" would no longer hold.
//
// A Publisher is immutable and safe for concurrent use.
type Publisher struct {
	topic string
}

// NewPublisher returns a Publisher for the stats topic.
func NewPublisher(topic string) (*Publisher, error) {
	if topic == "" {
		return nil, errInvalidConfig("empty stats topic")
	}
	return &Publisher{topic: topic}, nil
}

// Topic returns the stats topic.
func (p *Publisher) Topic() string { return p.topic }

// BudgetRecord returns the record of a budget's definition (kind 2).
func (p *Publisher) BudgetRecord(d BudgetDef) (*kgo.Record, error) {
	k, v, err := EncodeBudgetDef(d)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: p.topic, Key: k, Value: v}, nil
}

// ExperimentRecord returns the record of an experiment's definition (kind
// 4).
func (p *Publisher) ExperimentRecord(e ExperimentDef) (*kgo.Record, error) {
	k, v, err := EncodeExperimentDef(e)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: p.topic, Key: k, Value: v}, nil
}

// TombstoneKey returns the record that deletes the record of key (any
// kind; keys from BudgetKey, ExperimentKey or LedgerKey).
func (p *Publisher) TombstoneKey(key []byte) *kgo.Record {
	return &kgo.Record{Topic: p.topic, Key: key}
}
