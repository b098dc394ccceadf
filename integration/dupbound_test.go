package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
)

// At-least-once, a worker commits its offsets every commit interval after
// flushing its outputs, and commits the offsets of the partitions it lets
// go in a rebalance. So an event is processed twice only when the worker
// that processed it dies (or loses its session: the group expels it)
// before committing it: the
// duplicates of a kill are events of the killed worker's partitions
// between the group's committed offset and the end of the partition at
// the kill, at most one commit cycle of them (in steady state the events
// of one commit interval; a worker lagging behind polls at most
// commit_records + max_poll_records - 1 events in one cycle). A SIGKILL
// of the broker costs each worker as much: its last commit fails.

// killSnap is what the group had committed of the input when a worker
// was killed, and where the input ended.
type killSnap struct {
	at        time.Duration // after the window's begin
	workers   int           // killed: one, or all of the group (the broker killed)
	committed map[int32]int64
	end       map[int32]int64
}

// snapKill records the committed offsets of group and the end offsets of
// topic, right after a kill.
func snapKill(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string, at time.Duration, workers int) killSnap {
	t.Helper()
	return killSnap{at: at, workers: workers, committed: committedOffsets(ctx, t, adm, group, topic), end: endOffsets(ctx, t, adm, topic)}
}

// committedOffsets returns the offsets group has committed in topic. Right
// after a broker restart the admin client's connection is gone and the
// group coordinator may still be loading: it asks until they answer.
func committedOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	var committed kadm.OffsetResponses
	var err error
	if !waitFor(60*time.Second, func() bool { committed, err = adm.FetchOffsets(ctx, group); return err == nil }) {
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

// endOffsets returns the end offsets of topic, asking until the broker
// answers (see committedOffsets).
func endOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	var ends kadm.ListedOffsets
	var err error
	if !waitFor(60*time.Second, func() bool {
		ends, err = adm.ListEndOffsets(ctx, topic)
		return err == nil && ends.Error() == nil
	}) {
		t.Fatalf("end offsets of %s: %v %v", topic, err, ends.Error())
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// maxCycle is the most events a worker polls between two commits with the
// defaults the crash test keeps (a commit once CommitRecords are pending,
// after a poll of up to MaxPollRecords).
const maxCycle = consumer.DefaultCommitRecords + consumer.DefaultMaxPollRecords - 1

// checkKillDuplicates checks that every input event written more than once
// to outputs was, at one of the kills, past the group's committed offset
// and before the partition's end, and that no kill cost more than one
// commit cycle of events of each worker it killed; it logs how many each kill cost against the
// events not committed at that kill.
func checkKillDuplicates(t *testing.T, inputs []*kgo.Record, outputs map[string][]*kgo.Record, kills []killSnap, lost int) {
	t.Helper()
	copies := map[string]int{}
	for _, rs := range outputs {
		for _, r := range rs {
			copies[jsonField(r.Value, "id")]++
		}
	}
	perKill := make([]int, len(kills))
	unexplained := 0
	for _, r := range inputs {
		n := copies[jsonField(r.Value, "id")]
		if n < 2 {
			continue
		}
		k := killOf(r, kills)
		if k < 0 {
			unexplained += n - 1
			continue
		}
		perKill[k] += n - 1
	}
	for i, s := range kills {
		uncommitted := int64(0)
		for p, end := range s.end {
			uncommitted += end - max(s.committed[p], 0)
		}
		t.Logf("at-least-once: kill at t=%.1fs: %d duplicates; %d input events were not committed at the kill", s.at.Seconds(), perKill[i], uncommitted)
		if perKill[i] > s.workers*maxCycle {
			t.Errorf("at-least-once: the kill at t=%.1fs cost %d duplicates, more than one commit cycle of %d workers (%d)",
				s.at.Seconds(), perKill[i], s.workers, s.workers*maxCycle)
		}
	}
	// A worker expelled by the group (its session lost: a rebalance
	// outlasted its join request, say) stops as if killed, unseen by the
	// offsets recorded at the kills: one commit cycle each.
	t.Logf("at-least-once: %d duplicates not explained by a kill, %d sessions lost", unexplained, lost)
	if unexplained > lost*maxCycle {
		t.Errorf("at-least-once: %d duplicated events not explained by a kill, more than one commit cycle (%d) for each of the %d lost sessions",
			unexplained, maxCycle, lost)
	}
}

// killOf returns the index of the kill at which r was past the committed
// offset of its partition and before its end, or -1.
func killOf(r *kgo.Record, kills []killSnap) int {
	for i, s := range kills {
		if c, ok := s.committed[r.Partition]; (!ok || r.Offset >= c) && r.Offset < s.end[r.Partition] {
			return i
		}
	}
	return -1
}
