package stats

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A leader that has not yet learned a topic another broker listed
// answers ListOffsets with UNKNOWN_TOPIC_OR_PARTITION; ListSettled asks
// again until it knows. A topic nobody lists is answered at once.
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
	listed, err := ListSettled(ctx, adm.ListEndOffsets, "fresh")
	if err != nil || listed.Error() != nil {
		t.Fatalf("ListSettled: %v, %v", err, listed.Error())
	}
	if n := len(listed["fresh"]); n != 2 {
		t.Fatalf("%d partitions listed, want 2", n)
	}
	if n := refused.Load(); n != 3 {
		t.Fatalf("%d ListOffsets refused, want 3", n)
	}

	listed, err = ListSettled(ctx, adm.ListEndOffsets, "missing")
	if err == nil && listed.Error() == nil {
		t.Fatal("a missing topic listed without an error")
	}
}
