package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnsureTopics creates, on the cluster at seeds (any Kafka, not only an
// embedded broker), those of topics that do not exist yet, with partitions
// partitions (-1: the broker's default), the broker's default replication
// and the given topic configs (nil for none). Topics that already exist are
// left as they are. It retries until ctx is done while the cluster is not
// reachable.
func EnsureTopics(ctx context.Context, seeds []string, partitions int32, configs map[string]*string, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	return EnsureTopicsOpts(ctx, []kgo.Opt{kgo.SeedBrokers(seeds...)}, partitions, configs, topics...)
}

// EnsureTopicsOpts is EnsureTopics with the client's options (seed
// brokers, TLS, SASL: see internal/kafkaconn).
func EnsureTopicsOpts(ctx context.Context, clientOpts []kgo.Opt, partitions int32, configs map[string]*string, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(clientOpts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return CreateTopics(ctx, kadm.NewClient(cl), partitions, configs, topics...)
}

// CreateTopics is EnsureTopics with an admin client the caller owns.
func CreateTopics(ctx context.Context, adm *kadm.Client, partitions int32, configs map[string]*string, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	resps, err := adm.CreateTopics(ctx, partitions, -1, configs, topics...)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	var errs []error
	for _, t := range topics {
		r, ok := resps[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("create topic %s: no response", t))
		case r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists):
			errs = append(errs, fmt.Errorf("create topic %s: %w", t, r.Err))
		}
	}
	return errors.Join(errs...)
}
