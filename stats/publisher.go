package stats

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// Publisher turns reports into stats-topic records.
//
// Kind-1 reports are the exchange of workers that do not write ledgers
// yet: the ledger (Ledger) replaces them, at a cost that follows the
// changed pairs, once the consumer switches (see doc.go). The definition
// records (BudgetRecord, ExperimentRecord, DefinitionRecords) stay.
//
// Coordination cost: one record per budget x source per call. Callers
// publish once per sync interval the current reports of the sources they
// own (flow's Tree.Reports); the topic is compacted, so it holds about one
// record per budget x source however long the cluster runs.
//
// Records are keyed by EncodeKey and carry no partition: produce them with
// a key-hashing partitioner (kgo's default, or Partitioner with a nil base)
// so that every worker writes a given key to the same partition. Mixing
// partitioners across workers would split a key over two partitions, and
// "newest record wins" would no longer hold.
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

// Records returns one record per report, in order, for producing through
// the caller's own client (for example inside the transaction that commits
// the counted input). If any report cannot be encoded (ErrInvalidReport) it
// returns no records.
func (p *Publisher) Records(reports []flow.Report) ([]*kgo.Record, error) {
	out := make([]*kgo.Record, 0, len(reports))
	for _, r := range reports {
		k, v, err := EncodeReport(r)
		if err != nil {
			return nil, err
		}
		out = append(out, &kgo.Record{Topic: p.topic, Key: k, Value: v})
	}
	return out, nil
}

// Tombstone returns the record that deletes budget x source from the topic
// and from every View: for a budget that was removed, or a source that no
// longer exists.
func (p *Publisher) Tombstone(budget, source string) (*kgo.Record, error) {
	k, err := EncodeKey(budget, source)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: p.topic, Key: k}, nil
}

// Publish produces reports with cl and waits until the broker acknowledged
// them or ctx ends. It returns the encoding error, or every produce failure
// as *ProduceError (joined). cl must not be transactional, or must be inside
// a transaction.
func (p *Publisher) Publish(ctx context.Context, cl *kgo.Client, reports []flow.Report) error {
	recs, err := p.Records(reports)
	if err != nil || len(recs) == 0 {
		return err
	}
	var errs []error
	for i, res := range cl.ProduceSync(ctx, recs...) {
		if res.Err != nil {
			errs = append(errs, p.produceError(reports[i], res.Err))
		}
	}
	return errors.Join(errs...)
}

func (p *Publisher) produceError(r flow.Report, err error) error {
	return &ProduceError{Topic: p.topic, Budget: r.Budget, Source: r.Source, Err: err}
}

// BudgetRecord returns the record of a budget's definition (kind 2).
func (p *Publisher) BudgetRecord(d BudgetDef) (*kgo.Record, error) {
	k, v, err := EncodeBudgetDef(d)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: p.topic, Key: k, Value: v}, nil
}

// VariantsRecord returns the record of one source's cumulative variant
// counts of one experiment (kind 3).
func (p *Publisher) VariantsRecord(vc VariantCounts) (*kgo.Record, error) {
	k, v, err := EncodeVariantCounts(vc)
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
// kind; keys from BudgetKey, VariantsKey, ExperimentKey or EncodeKey).
func (p *Publisher) TombstoneKey(key []byte) *kgo.Record {
	return &kgo.Record{Topic: p.topic, Key: key}
}
