package stats

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicSpec describes a topic EnsureTopics creates when it is missing.
type TopicSpec struct {
	Name string
	// Partitions is the partition count to create with; 0 or -1 lets the
	// broker choose (num.partitions). An existing topic with fewer
	// partitions than a positive Partitions is a mismatch: a stats topic
	// with fewer partitions than its input cannot hold every source's
	// ledger. An existing topic with more is accepted.
	Partitions int32
	// ReplicationFactor is the replica count to create with; 0 or -1 lets
	// the broker choose (default.replication.factor).
	ReplicationFactor int16
	// Compact sets cleanup.policy=compact (unless Configs sets
	// cleanup.policy) and, unless Configs sets it, segment.ms=600000 so
	// that a real broker compacts within minutes rather than after the
	// default week-long segment roll. An existing topic whose
	// cleanup.policy lacks "compact" is a mismatch.
	Compact bool
	// Configs are further topic configs to create with (for example
	// retention.ms for an output topic). Existing topics are not altered.
	Configs map[string]string
}

// StatsTopic is the spec of the compacted stats topic. partitions must be
// at least the partition count of the largest input (or reward) topic:
// the ledger of source "topic/p" lives in stats partition p, so that a
// worker taking a partition restores it by reading one stats partition.
// Every View reads every partition.
func StatsTopic(name string, partitions int32) TopicSpec {
	return TopicSpec{Name: name, Partitions: partitions, Compact: true}
}

// compactSegmentMs is segment.ms for compacted topics: Kafka compacts only
// closed segments.
const compactSegmentMs = "600000"

func (s TopicSpec) configs() map[string]*string {
	out := make(map[string]*string, len(s.Configs)+2)
	for k, v := range s.Configs {
		out[k] = kadm.StringPtr(v)
	}
	if s.Compact {
		if _, ok := out["cleanup.policy"]; !ok {
			out["cleanup.policy"] = kadm.StringPtr("compact")
		}
		if _, ok := out["segment.ms"]; !ok {
			out["segment.ms"] = kadm.StringPtr(compactSegmentMs)
		}
	}
	return out
}

// EnsureTopics creates the topics of specs that do not exist and checks
// those that do. Workers may call it concurrently: a topic another worker
// creates in between ("already exists") counts as existing.
//
// It returns once every topic is visible in the cluster's metadata with at
// least its partitions, so that producers and readers can use them at once;
// ctx bounds the wait. Every failure is a *TopicError (joined with
// errors.Join when several topics fail) wrapping ErrTopicMismatch,
// ErrInvalidConfig, a kerr error from the broker, or a context error.
func EnsureTopics(ctx context.Context, adm *kadm.Client, specs ...TopicSpec) error {
	if adm == nil {
		return errInvalidConfig("nil kadm client")
	}
	var errs []error
	for _, s := range specs {
		if s.Name == "" {
			errs = append(errs, &TopicError{Topic: s.Name, Op: "create", Err: fmt.Errorf("%w: empty topic name", ErrInvalidConfig)})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, s := range specs {
		if err := ensureTopic(ctx, adm, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listFresh lists topics bypassing the kgo client's metadata cache (kadm
// answers ListTopics from a cache refreshed at most every MetadataMinAge,
// 5s by default, so a topic just created would stay "unknown" that long).
// Asking for authorized operations is what makes kadm send a fresh request.
func listFresh(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetails, error) {
	return adm.ListTopics(kadm.WithAuthorizedOps(ctx), topic)
}

func ensureTopic(ctx context.Context, adm *kadm.Client, s TopicSpec) error {
	details, err := listFresh(ctx, adm, s.Name)
	if err != nil {
		return &TopicError{Topic: s.Name, Op: "list", Err: err}
	}
	if d, ok := details[s.Name]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		parts, rf := s.Partitions, s.ReplicationFactor
		if parts <= 0 {
			parts = -1
		}
		if rf <= 0 {
			rf = -1
		}
		resp, err := adm.CreateTopic(ctx, parts, rf, s.configs(), s.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			if resp.ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
			}
			return &TopicError{Topic: s.Name, Op: "create", Err: err}
		}
	} else if d.Err != nil {
		return &TopicError{Topic: s.Name, Op: "list", Err: d.Err}
	}
	return verifyTopic(ctx, adm, s)
}

// verifyTopic waits until s is visible with its partitions, then checks its
// cleanup policy.
func verifyTopic(ctx context.Context, adm *kadm.Client, s TopicSpec) error {
	backoff := firstBackoff
	for {
		details, err := listFresh(ctx, adm, s.Name)
		if err == nil {
			d := details[s.Name]
			n := int32(len(d.Partitions))
			switch {
			case d.Err != nil && !kerr.IsRetriable(d.Err) && !errors.Is(d.Err, kerr.UnknownTopicOrPartition):
				return &TopicError{Topic: s.Name, Op: "verify", Err: d.Err}
			case d.Err == nil && n > 0 && s.Partitions > 0 && n < s.Partitions:
				return &TopicError{Topic: s.Name, Op: "verify", Err: fmt.Errorf("%w: %d partitions, want at least %d", ErrTopicMismatch, n, s.Partitions)}
			case d.Err == nil && n > 0 && allLed(d.Partitions):
				return verifyPolicy(ctx, adm, s)
			}
		}
		if !pause(ctx, &backoff) {
			if err == nil {
				err = errors.New("not visible in metadata yet")
			}
			return &TopicError{Topic: s.Name, Op: "verify", Err: errors.Join(ctx.Err(), err)}
		}
	}
}

func allLed(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func verifyPolicy(ctx context.Context, adm *kadm.Client, s TopicSpec) error {
	if !s.Compact {
		return nil
	}
	rc, err := describeConfigs(ctx, adm, s.Name)
	if err != nil {
		return &TopicError{Topic: s.Name, Op: "describe configs", Err: err}
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			if strings.Contains(c.MaybeValue(), "compact") {
				return nil
			}
			return &TopicError{Topic: s.Name, Op: "verify", Err: fmt.Errorf("%w: cleanup.policy=%q, want compact", ErrTopicMismatch, c.MaybeValue())}
		}
	}
	return &TopicError{Topic: s.Name, Op: "verify", Err: fmt.Errorf("%w: cleanup.policy not reported, want compact", ErrTopicMismatch)}
}

// describeConfigs describes topic's configs. Of a cluster of several
// brokers, the one asked may not know yet a topic another has just
// listed (each learns it from the controller in its own time): an
// unknown topic, as any retriable error, is asked again until ctx ends.
func describeConfigs(ctx context.Context, adm *kadm.Client, topic string) (kadm.ResourceConfig, error) {
	backoff := firstBackoff
	for {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		var rc kadm.ResourceConfig
		if err == nil {
			rc, err = rcs.On(topic, nil)
		}
		if err == nil {
			err = rc.Err
		}
		if err == nil || !kerr.IsRetriable(err) { // UNKNOWN_TOPIC_OR_PARTITION is retriable
			return rc, err
		}
		if !pause(ctx, &backoff) {
			return rc, errors.Join(ctx.Err(), err)
		}
	}
}
