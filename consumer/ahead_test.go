package consumer

import (
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recs returns records of offsets from..to-1 in epoch 1.
func recs(from, to int64) []*kgo.Record {
	var out []*kgo.Record
	for o := from; o < to; o++ {
		out = append(out, &kgo.Record{Offset: o, LeaderEpoch: 1})
	}
	return out
}

func eo(o int64) kgo.EpochOffset { return kgo.EpochOffset{Epoch: 1, Offset: o} }

// TestPollAheadDispatch checks that dispatch hands out at most its limit,
// splitting a partition's records, remembers the offset after the last
// record dispatched, and drops the records of a partition whose owner
// changed since they were polled.
func TestPollAheadDispatch(t *testing.T) {
	w := &Worker{parts: map[topicPartition]*partition{}}
	w.cfg.now = time.Now
	part := func(tp topicPartition) *partition {
		p := &partition{in: make(chan batch, 4), lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lag"})}
		w.parts[tp] = p
		return p
	}
	a, b, c := topicPartition{"in", 0}, topicPartition{"in", 1}, topicPartition{"in", 2}
	pa, pb := part(a), part(b)
	old := &partition{} // c's owner when polled, revoked since
	part(c)
	w.ahead.queue = []queued{{tp: a, p: pa, recs: recs(0, 5), hwm: 9}, {tp: c, p: old, recs: recs(0, 3)}, {tp: b, p: pb, recs: recs(10, 14), hwm: 14}}

	if n := w.dispatch(3); n != 3 {
		t.Fatalf("dispatched %d, want 3", n)
	}
	if got := (<-pa.in).recs; len(got) != 3 || got[0].Offset != 0 {
		t.Fatalf("first batch %v, want offsets 0-2 of a", got)
	}
	if n := w.dispatch(10); n != 2+4 {
		t.Fatalf("dispatched %d, want the 2 left of a and the 4 of b (c's dropped)", n)
	}
	if got := (<-pa.in).recs; len(got) != 2 || got[0].Offset != 3 {
		t.Fatalf("second batch of a %v, want offsets 3-4", got)
	}
	if got := (<-pb.in).recs; len(got) != 4 || got[0].Offset != 10 {
		t.Fatalf("batch of b %v, want offsets 10-13", got)
	}
	if len(w.parts[c].in) != 0 || len(w.ahead.queue) != 0 {
		t.Fatalf("c got %d batches, queue left %d: want none", len(w.parts[c].in), len(w.ahead.queue))
	}
	want := map[topicPartition]kgo.EpochOffset{a: eo(5), b: eo(14)}
	if !reflect.DeepEqual(w.ahead.next, want) {
		t.Fatalf("next %v, want %v", w.ahead.next, want)
	}
	if pa.lagRecords != 9-4-1 || pb.lagRecords != 0 {
		t.Fatalf("lag a %d b %d, want 4 and 0", pa.lagRecords, pb.lagRecords)
	}

	w.inflight.Add(-3)
}

// TestPollAheadCommitOffsets checks what a unit of work commits: the
// offset after the last dispatched record, the first queued one of a
// partition not dispatched since, and the delay budgets' held offsets
// over both.
func TestPollAheadCommitOffsets(t *testing.T) {
	a, b, c := topicPartition{"in", 0}, topicPartition{"in", 1}, topicPartition{"in", 2}
	var p pollAhead
	if got := p.commitOffsets(nil); got != nil {
		t.Fatalf("nothing dispatched or queued: %v, want nil (kgo's offsets)", got)
	}
	p.next = map[topicPartition]kgo.EpochOffset{a: eo(5)}
	p.queue = []queued{{tp: a, recs: recs(5, 8)}, {tp: b, recs: recs(20, 22)}, {tp: b, recs: recs(22, 23)}, {tp: c, recs: recs(7, 9)}}
	held := map[string]map[int32]kgo.EpochOffset{"in": {2: {Epoch: 1, Offset: 3}}}
	want := map[string]map[int32]kgo.EpochOffset{"in": {0: eo(5), 1: eo(20), 2: eo(3)}}
	if got := p.commitOffsets(held); !reflect.DeepEqual(got, want) {
		t.Fatalf("commit offsets %v, want %v", got, want)
	}
}

// TestPollAheadForget checks that a partition replaced in the middle of a
// unit of work (a parked partition restarted: its held records were not
// processed) leaves the unit: the offsets committed no longer name it, its
// queued records go, and the other partitions keep theirs.
func TestPollAheadForget(t *testing.T) {
	a, b := topicPartition{"in", 0}, topicPartition{"in", 1}
	var p pollAhead
	p.next = map[topicPartition]kgo.EpochOffset{a: eo(349), b: eo(12)}
	p.queue = []queued{{tp: a, recs: recs(349, 360)}, {tp: b, recs: recs(12, 14)}, {tp: a, recs: recs(360, 362)}}
	p.behind = map[string]map[int32]kgo.EpochOffset{"in": {0: eo(300), 1: eo(10)}}
	p.forget(a)
	want := map[string]map[int32]kgo.EpochOffset{"in": {1: eo(12)}}
	if got := p.commitOffsets(nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("commit offsets after forget %v, want %v", got, want)
	}
	if len(p.queue) != 1 || p.queue[0].tp != b {
		t.Fatalf("queue after forget %+v, want b's records only", p.queue)
	}
	if _, ok := p.behind["in"][0]; ok {
		t.Fatalf("behind after forget %v: the forgotten partition is rewound already", p.behind)
	}
}

// TestPollAheadEnded checks the queue after a unit of work: committed,
// the queued partitions are remembered as behind kgo and the held ones'
// records dropped; aborted, the queue goes and the partitions behind at
// the last commit are to be rewound.
func TestPollAheadEnded(t *testing.T) {
	a, b := topicPartition{"in", 0}, topicPartition{"in", 1}
	var p pollAhead
	p.next = map[topicPartition]kgo.EpochOffset{a: eo(5)}
	p.queue = []queued{{tp: a, recs: recs(5, 8)}, {tp: b, recs: recs(20, 22)}}
	held := map[string]map[int32]kgo.EpochOffset{"in": {1: eo(18)}}
	if rw := p.ended(true, held); rw != nil {
		t.Fatalf("committed: rewind %v, want none", rw)
	}
	if len(p.next) != 0 || len(p.queue) != 1 || p.queue[0].tp != a {
		t.Fatalf("after the commit: next %v, queue %v; want no next and only a queued", p.next, p.queue)
	}
	behind := map[string]map[int32]kgo.EpochOffset{"in": {0: eo(5)}}
	if !reflect.DeepEqual(p.behind, behind) {
		t.Fatalf("behind %v, want %v", p.behind, behind)
	}
	p.next = map[topicPartition]kgo.EpochOffset{a: eo(8)}
	p.queue = p.queue[1:]
	if rw := p.ended(false, nil); !reflect.DeepEqual(rw, behind) {
		t.Fatalf("aborted: rewind %v, want %v", rw, behind)
	}
	if len(p.queue) != 0 || p.behind != nil || len(p.next) != 0 {
		t.Fatalf("after the abort: queue %v behind %v next %v, want all empty", p.queue, p.behind, p.next)
	}
}
