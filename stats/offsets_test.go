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
