package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnsureTopicsOpts creates, on the cluster the client options reach (seed
// brokers, TLS, SASL: see internal/kafkaconn; any Kafka, not only an
// embedded broker), those of topics that do not exist yet, with partitions
// partitions (-1: the broker's default), the broker's default replication
// and the given topic configs (nil for none). Topics that already exist are
// left as they are. It retries until ctx is done while the cluster is not
// reachable.
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

// CreateTopics is EnsureTopics with an admin client the caller owns. It
// returns once the cluster lists every topic with a leader for each
// partition: Apache Kafka answers CreateTopics a moment before its
// metadata shows the topic, and a producer that meets
// UNKNOWN_TOPIC_OR_PARTITION a few times fails its records.
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
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return waitListed(ctx, adm, topics)
}

// waitListed polls the cluster's metadata, bypassing kadm's cache, until
// it lists every topic with a leader for each partition, or ctx ends.
func waitListed(ctx context.Context, adm *kadm.Client, topics []string) error {
	backoff := 20 * time.Millisecond
	for {
		details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), topics...)
		if err == nil && listedWithLeaders(details, topics) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v created, not listed by the cluster: %w", topics, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func listedWithLeaders(details kadm.TopicDetails, topics []string) bool {
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}
