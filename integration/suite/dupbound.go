package suite

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
)

// KillSnap is what the group had committed of the input when a worker
// was killed, and where the input ended.
type KillSnap struct {
	At        time.Duration // after the window's begin
	Workers   int           // killed: one, or all of the group (the broker killed)
	Committed map[int32]int64
	End       map[int32]int64
}

// SnapKill records the committed offsets of group and the end offsets of
// topic, right after a kill.
func SnapKill(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string, at time.Duration, workers int) KillSnap {
	t.Helper()
	return KillSnap{At: at, Workers: workers, Committed: CommittedOffsets(ctx, t, adm, group, topic), End: EndOffsets(ctx, t, adm, topic)}
}

// CommittedOffsets returns the offsets group has committed in topic. Right
// after a broker restart the admin client's connection is gone and the
// group coordinator may still be loading: it asks until they answer.
func CommittedOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	var committed kadm.OffsetResponses
	var err error
	if !WaitFor(60*time.Second, func() bool { committed, err = adm.FetchOffsets(ctx, group); return err == nil }) {
		t.Fatalf("committed offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

// EndOffsets returns the end offsets of topic, asking until the broker
// answers (see committedOffsets).
func EndOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	var ends kadm.ListedOffsets
	var err error
	if !WaitFor(60*time.Second, func() bool {
		ends, err = adm.ListEndOffsets(ctx, topic)
		return err == nil && ends.Error() == nil
	}) {
		t.Fatalf("end offsets of %s: %v %v", topic, err, ends.Error())
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// MaxCycle is the most events a killed at-least-once worker processes
// again: those after its last written ledgers, three units of work (the
// two whose ledgers were being written, and the one being processed),
// each of at most the events it polls between two commits with the
// defaults the crash test keeps (a commit once CommitRecords are pending,
// after a poll of up to MaxPollRecords).
const MaxCycle = 3 * (consumer.DefaultCommitRecords + consumer.DefaultMaxPollRecords - 1)

// CheckKillDuplicates checks that every input event written more than once
// to outputs was, at one of the kills, past the group's committed offset
// and before the partition's end, and that no kill cost more than
// MaxCycle events of each worker it killed; it logs how many each kill cost against the
// events not committed at that kill.
func CheckKillDuplicates(t *testing.T, inputs []*kgo.Record, outputs map[string][]*kgo.Record, kills []KillSnap, lost int) {
	t.Helper()
	copies := map[string]int{}
	for _, rs := range outputs {
		for _, r := range rs {
			copies[JsonField(r.Value, "id")]++
		}
	}
	perKill := make([]int, len(kills))
	unexplained := 0
	for _, r := range inputs {
		n := copies[JsonField(r.Value, "id")]
		if n < 2 {
			continue
		}
		k := KillOf(r, kills)
		if k < 0 {
			unexplained += n - 1
			continue
		}
		perKill[k] += n - 1
	}
	for i, s := range kills {
		uncommitted := int64(0)
		for p, end := range s.End {
			uncommitted += end - max(s.Committed[p], 0)
		}
		t.Logf("at-least-once: kill at t=%.1fs: %d duplicates; %d input events were not committed at the kill", s.At.Seconds(), perKill[i], uncommitted)
		if perKill[i] > s.Workers*MaxCycle {
			t.Errorf("at-least-once: the kill at t=%.1fs cost %d duplicates, more than MaxCycle of %d workers (%d)",
				s.At.Seconds(), perKill[i], s.Workers, s.Workers*MaxCycle)
		}
	}
	// A worker expelled by the group (its session lost: a rebalance
	// outlasted its join request, say) stops as if killed, unseen by the
	// offsets recorded at the kills: MaxCycle each.
	t.Logf("at-least-once: %d duplicates not explained by a kill, %d sessions lost", unexplained, lost)
	if unexplained > lost*MaxCycle {
		t.Errorf("at-least-once: %d duplicated events not explained by a kill, more than MaxCycle (%d) for each of the %d lost sessions",
			unexplained, MaxCycle, lost)
	}
}

// KillOf returns the index of the kill at which r was past the committed
// offset of its partition and before its end, or -1.
func KillOf(r *kgo.Record, kills []KillSnap) int {
	for i, s := range kills {
		if c, ok := s.Committed[r.Partition]; (!ok || r.Offset >= c) && r.Offset < s.End[r.Partition] {
			return i
		}
	}
	return -1
}
