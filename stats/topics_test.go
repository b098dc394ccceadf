package stats

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEnsureTopics(t *testing.T) {
	_, conn := newCluster(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, conn))
	specs := []TopicSpec{
		StatsTopic("stats", 3),
		CapTopic("caps", 6),
		{Name: "out", Partitions: 2, Configs: map[string]string{"retention.ms": "3600000"}},
	}

	// Workers race to create the same topics; every one succeeds.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			errs[i] = EnsureTopics(ctx, kadm.NewClient(newClient(t, conn)), specs...)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	// And again, all existing.
	if err := EnsureTopics(ctx, adm, specs...); err != nil {
		t.Fatal(err)
	}

	details, err := adm.ListTopics(ctx, "stats", "caps", "out")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if n := len(details[s.Name].Partitions); n != int(s.Partitions) {
			t.Fatalf("%s: %d partitions, want %d", s.Name, n, s.Partitions)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "stats", "caps", "out")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"stats": {"cleanup.policy": "compact", "segment.ms": compactSegmentMs},
		"caps":  {"cleanup.policy": "compact"},
		"out":   {"cleanup.policy": "delete", "retention.ms": "3600000"},
	}
	for _, rc := range rcs {
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for k, v := range want[rc.Name] {
			if got[k] != v {
				t.Fatalf("%s: %s = %q, want %q", rc.Name, k, got[k], v)
			}
		}
	}
}

func TestEnsureTopicsMismatch(t *testing.T) {
	_, conn := newCluster(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, conn))
	if err := EnsureTopics(ctx, adm, TopicSpec{Name: "plain", Partitions: 1}, TopicSpec{Name: "small", Partitions: 2, Compact: true}); err != nil {
		t.Fatal(err)
	}

	err := EnsureTopics(ctx, adm, StatsTopic("plain", 1), CapTopic("small", 4), StatsTopic("fine", 1))
	var te *TopicError
	if !errors.Is(err, ErrTopicMismatch) || !errors.As(err, &te) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`"plain"`, `cleanup.policy="delete"`, `"small"`, "2 partitions, want at least 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %s", err, want)
		}
	}
	// The good spec was still created.
	if err := EnsureTopics(ctx, adm, StatsTopic("fine", 1)); err != nil {
		t.Fatal(err)
	}

	if err := EnsureTopics(ctx, adm, TopicSpec{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty name: err = %v", err)
	}
	if err := EnsureTopics(ctx, nil, StatsTopic("x", 1)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil admin: err = %v", err)
	}
	// A broker refusal is reported with the topic and the kerr error.
	err = EnsureTopics(ctx, adm, TopicSpec{Name: "bad", ReplicationFactor: 3})
	if !errors.Is(err, kerr.InvalidReplicationFactor) || !errors.As(err, &te) || te.Op != "create" || te.Topic != "bad" {
		t.Fatalf("replication factor 3 on one broker: err = %v", err)
	}
}

// A broker that has not yet learned a topic another broker created
// answers its DescribeConfigs with UNKNOWN_TOPIC_OR_PARTITION; the check
// of the stats topic's cleanup policy asks again.
func TestEnsureTopicsAsksAgainABrokerThatDoesNotKnowTheTopicYet(t *testing.T) {
	c, conn := newCluster(t)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Load() >= 2 {
			return nil, nil, false
		}
		refused.Add(1)
		c.KeepControl()
		r := req.(*kmsg.DescribeConfigsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			res.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil, true
	})
	if err := EnsureTopics(testCtx(t), kadm.NewClient(newClient(t, conn)), StatsTopic("stats", 3)); err != nil {
		t.Fatal(err)
	}
	if n := refused.Load(); n != 2 {
		t.Fatalf("%d DescribeConfigs refused, want 2", n)
	}
}
