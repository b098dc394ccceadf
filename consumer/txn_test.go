package consumer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// An at-least-once worker whose member was removed from the group (its
// session expired while the machine stalled, say) must not stop when its
// offset commit is refused: the outputs are written and the partitions'
// new owners read the records again.
func TestPlainSessionOutlivesGroupEviction(t *testing.T) {
	env := newTestEnv(t)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprint(i)), Value: []byte(`{}`)})
	}
	env.produce(recs)
	cl, err := kgo.NewClient(append(env.clientOpts(),
		kgo.ConsumerGroup("evicted"), kgo.ConsumeTopics("events"), kgo.InstanceID("member-1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())...)
	if err != nil {
		t.Fatal(err)
	}
	s := plainSession{cl: cl, log: zerolog.Nop()}
	defer s.close()
	defer s.allowRebalance() // else a failing test hangs in close
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for got := 0; got == 0; {
		fs := s.poll(ctx, 100)
		if ctx.Err() != nil {
			t.Fatal("no records polled")
		}
		got = fs.NumRecords()
	}
	resp, err := env.adm.LeaveGroup(ctx, kadm.LeaveGroup("evicted").InstanceIDs("member-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.EachError(func(l kadm.LeaveGroupResponse) { t.Fatalf("removing %s: %v", l.InstanceID, l.Err) })

	committed, err := s.end(ctx, true, nil)
	if err != nil || !committed {
		t.Fatalf("end after eviction: committed %v, err %v; want true, nil", committed, err)
	}
}

func TestGroupMovedOn(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.UnknownMemberID, true},
		{fmt.Errorf("commit: %w", kerr.IllegalGeneration), true},
		{kerr.RebalanceInProgress, true},
		{kerr.FencedInstanceID, true},
		{kerr.CoordinatorNotAvailable, false},
		{context.DeadlineExceeded, false},
		{errors.New("other"), false},
	} {
		if got := groupMovedOn(tc.err); got != tc.want {
			t.Errorf("groupMovedOn(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
