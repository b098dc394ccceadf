package stats

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A leader that has not yet learned a topic another broker listed
// answers ListOffsets with UNKNOWN_TOPIC_OR_PARTITION; ListSettled asks
// again until it knows. A topic nobody lists is answered at once. A
// partition that stays unavailable is asked for until ctx ends, and the
// last answer names its error.
func TestListSettledAsksAgainUntilTheLeaderKnowsTheTopic(t *testing.T) {
	c, conn := newCluster(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, conn))
	if err := EnsureTopics(ctx, adm, TopicSpec{Name: "fresh", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Load() >= 3 {
			return nil, nil, false
		}
		refused.Add(1)
		c.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	var waits atomic.Int32
	listed, err := ListSettled(ctx, adm.ListEndOffsets, "fresh", func(error) { waits.Add(1) })
	if err != nil || listed.Error() != nil {
		t.Fatalf("ListSettled: %v, %v", err, listed.Error())
	}
	if n := len(listed["fresh"]); n != 2 {
		t.Fatalf("%d partitions listed, want 2", n)
	}
	if n := refused.Load(); n != 3 {
		t.Fatalf("%d ListOffsets refused, want 3", n)
	}
	if n := waits.Load(); n != 0 {
		t.Fatalf("a wait of three answers was reported %d times", n)
	}

	refused.Store(-1 << 30) // refused from here on
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	listed, err = ListSettled(short, adm.ListEndOffsets, "fresh", nil)
	if short.Err() == nil {
		t.Fatal("ListSettled returned before its context ended, the partitions still unavailable")
	}
	if err == nil && !errors.Is(listed.Error(), kerr.UnknownTopicOrPartition) {
		t.Fatalf("ListSettled after its context ended: %v, %v; want the partitions' UNKNOWN_TOPIC_OR_PARTITION", err, listed.Error())
	}

	// A wait that goes on is reported, naming the partition and its
	// error; here the report ends the wait.
	reported, stop := context.WithCancel(ctx)
	defer stop()
	var got error
	if _, err := ListSettled(reported, adm.ListEndOffsets, "fresh", func(e error) { got = e; stop() }); err != nil {
		t.Fatal(err)
	}
	var te *TopicError
	if !errors.As(got, &te) || te.Topic != "fresh" || !errors.Is(got, kerr.UnknownTopicOrPartition) || !strings.Contains(got.Error(), "partition ") {
		t.Fatalf("the wait was reported as %v; want a *TopicError of fresh naming a partition and UNKNOWN_TOPIC_OR_PARTITION", got)
	}
	refused.Store(3)

	listed, err = ListSettled(ctx, adm.ListEndOffsets, "missing", nil)
	if err == nil && listed.Error() == nil {
		t.Fatal("a missing topic listed without an error")
	}
}

// A metadata answer that does not list the topic (partition -1) may come
// from a broker that is coming back and has not yet loaded the topic:
// ListSettled asks again and takes the next broker's answer. A topic
// unknown to missingTries answers in a row is missing, and the answer is
// returned before ctx ends; an error asking again cannot clear (here
// authorization) is returned at once.
func TestListSettledAsksAgainWhenTheTopicIsNotListed(t *testing.T) {
	ctx := testCtx(t)
	topicErr := func(err error) kadm.ListedOffsets {
		return kadm.ListedOffsets{"t": {-1: {Topic: "t", Partition: -1, Err: err}}}
	}
	var calls int
	list := func(unknownFor int, err error) func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls = 0
		return func(context.Context, ...string) (kadm.ListedOffsets, error) {
			calls++
			if calls <= unknownFor {
				return topicErr(err), nil
			}
			return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 7}, 1: {Topic: "t", Partition: 1, Offset: 9}}}, nil
		}
	}

	listed, err := ListSettled(ctx, list(3, kerr.UnknownTopicOrPartition), "t", nil)
	if err != nil || listed.Error() != nil || len(listed["t"]) != 2 || calls != 4 {
		t.Fatalf("unknown for 3 answers: %v, %v, %d partitions after %d answers; want 2 partitions after 4", err, listed.Error(), len(listed["t"]), calls)
	}

	listed, err = ListSettled(ctx, list(1<<30, kerr.UnknownTopicOrPartition), "t", nil)
	if err != nil || !errors.Is(listed.Error(), kerr.UnknownTopicOrPartition) || calls != missingTries {
		t.Fatalf("never listed: %v, %v after %d answers; want UNKNOWN_TOPIC_OR_PARTITION after %d", err, listed.Error(), calls, missingTries)
	}
	if ctx.Err() != nil {
		t.Fatal("ListSettled waited for its context to end on a missing topic")
	}

	listed, err = ListSettled(ctx, list(1<<30, kerr.TopicAuthorizationFailed), "t", nil)
	if err != nil || !errors.Is(listed.Error(), kerr.TopicAuthorizationFailed) || calls != 1 {
		t.Fatalf("not authorized: %v, %v after %d answers; want TOPIC_AUTHORIZATION_FAILED after 1", err, listed.Error(), calls)
	}
}

// kadm returns *ShardErrors for the partitions it could not ask (no
// leader known to the client's metadata yet, as right after the topic was
// created on a cluster of several brokers): ListSettled asks again while
// each of its errors is retriable, returns the last one once ctx ends, and
// returns any other at once.
func TestListSettledAsksAgainAfterShardErrors(t *testing.T) {
	ctx := testCtx(t)
	shardErr := func(err error) error {
		return &kadm.ShardErrors{Name: "ListOffsets", Errs: []kadm.ShardError{{Err: err}}}
	}
	var calls int
	list := func(failFor int, err error) func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls = 0
		return func(context.Context, ...string) (kadm.ListedOffsets, error) {
			calls++
			if calls <= failFor {
				return kadm.ListedOffsets{}, shardErr(err)
			}
			return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 7}}}, nil
		}
	}

	listed, err := ListSettled(ctx, list(3, kerr.UnknownTopicOrPartition), "t", nil)
	if err != nil || len(listed["t"]) != 1 || calls != 4 {
		t.Fatalf("shard errors for 3 answers: %v, %d partitions after %d answers; want 1 partition after 4", err, len(listed["t"]), calls)
	}

	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = ListSettled(short, list(1<<30, kerr.UnknownTopicOrPartition), "t", nil)
	if short.Err() == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || calls < 2 {
		t.Fatalf("shard errors until the context ends: %v after %d answers (context %v); want UNKNOWN_TOPIC_OR_PARTITION once it ended", err, calls, short.Err())
	}

	_, err = ListSettled(ctx, list(1<<30, kerr.TopicAuthorizationFailed), "t", nil)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || calls != 1 {
		t.Fatalf("not authorized: %v after %d answers; want TOPIC_AUTHORIZATION_FAILED after 1", err, calls)
	}
}
