package stats

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

func checkpointOf(source string, offset int64, n uint64) Checkpoint {
	return Checkpoint{Source: source, Offset: offset, Reports: []flow.Report{
		{Budget: "z-child", Source: source, At: t0, Since: t1, Total: flow.Counters{Offered: n, Passed: n / 2}},
		{Budget: "a-root", At: t0, Since: t1, Total: flow.Counters{Offered: 2 * n, Passed: n, Rewards: float64(n) / 4}, Period: 7, InPeriod: flow.Counters{Offered: 1}},
	}}
}

func sameCheckpoint(a, b Checkpoint) bool {
	if a.Source != b.Source || a.Offset != b.Offset || len(a.Reports) != len(b.Reports) {
		return false
	}
	for i := range a.Reports {
		if !sameReport(a.Reports[i], b.Reports[i]) {
			return false
		}
	}
	return true
}

func TestCheckpointRoundTrip(t *testing.T) {
	c := checkpointOf("events/3", 1234, 100)
	v, err := EncodeCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCheckpoint("events/3", v)
	if err != nil {
		t.Fatal(err)
	}
	// Decoded reports are sorted by budget and carry the source.
	want := Checkpoint{Source: "events/3", Offset: 1234, Reports: []flow.Report{c.Reports[1], c.Reports[0]}}
	want.Reports[0].Source = "events/3"
	if !sameCheckpoint(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if r, ok := got.Report("z-child"); !ok || r.Total.Offered != 100 {
		t.Fatalf("Report(z-child) = %+v, %v", r, ok)
	}
	if _, ok := got.Report("nope"); ok {
		t.Fatal("Report(nope) found")
	}

	// Empty checkpoint, unknown offset.
	v, _ = EncodeCheckpoint(Checkpoint{Source: "s/0", Offset: -1})
	if got, err := DecodeCheckpoint("s/0", v); err != nil || got.Offset != -1 || len(got.Reports) != 0 {
		t.Fatalf("empty: %+v, %v", got, err)
	}
	if !bytes.Equal(v, []byte{1, 0, 1, 0}) {
		t.Fatalf("empty checkpoint = %x", v)
	}
}

func TestCheckpointRejects(t *testing.T) {
	c := checkpointOf("events/3", 1, 1)
	c.Reports[0].Source = "events/4"
	if _, err := EncodeCheckpoint(c); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("foreign source: err = %v", err)
	}
	c = checkpointOf("events/3", 1, 1)
	c.Reports[1].Budget = c.Reports[0].Budget
	if _, err := EncodeCheckpoint(c); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("duplicate budget: err = %v", err)
	}
	if _, err := EncodeCheckpoint(Checkpoint{}); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("empty source: err = %v", err)
	}
	if _, err := CheckpointRecord("", 0, checkpointOf("e/0", 0, 0)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty topic: err = %v", err)
	}

	v, _ := EncodeCheckpoint(checkpointOf("events/3", 1, 1))
	if _, err := DecodeCheckpoint("events/3", append([]byte{9}, v[1:]...)); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("major 9: err = %v", err)
	}
	if _, err := DecodeCheckpoint("events/3", append(bytes.Clone(v), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("1.0 + trailing: err = %v", err)
	}
	newer := append(bytes.Clone(v), 0xaa)
	newer[1] = 3
	if _, err := DecodeCheckpoint("events/3", newer); err != nil {
		t.Fatalf("1.3 + trailing: err = %v", err)
	}
	for n := range len(v) {
		if _, err := DecodeCheckpoint("events/3", v[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: err = %v", n, err)
		}
	}
}

func TestSourceName(t *testing.T) {
	s := SourceName("events.v2", 17)
	if s != "events.v2/17" {
		t.Fatalf("SourceName = %q", s)
	}
	topic, p, err := ParseSource(s)
	if err != nil || topic != "events.v2" || p != 17 {
		t.Fatalf("ParseSource = %q, %d, %v", topic, p, err)
	}
	for _, bad := range []string{"", "events", "/3", "events/", "events/-1", "events/x", "events/99999999999"} {
		if _, _, err := ParseSource(bad); !errors.Is(err, ErrInvalidReport) {
			t.Fatalf("ParseSource(%q) err = %v", bad, err)
		}
	}
}

// FuzzDecodeCheckpoint checks that decoding arbitrary bytes never panics and
// that what decodes re-encodes to the same checkpoint.
func FuzzDecodeCheckpoint(f *testing.F) {
	v, _ := EncodeCheckpoint(checkpointOf("events/3", 99, 5))
	f.Add(v)
	v, _ = EncodeCheckpoint(Checkpoint{Source: "events/3", Offset: math.MinInt64})
	f.Add(v)
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 0, 2, 1, 'a', 0, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, value []byte) {
		c, err := DecodeCheckpoint("events/3", value)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a DecodeError", err)
			}
			return
		}
		v2, err := EncodeCheckpoint(c)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", c, err)
		}
		c2, err := DecodeCheckpoint("events/3", v2)
		if err != nil || !sameCheckpoint(c, c2) {
			t.Fatalf("round trip %+v -> %+v (%v)", c, c2, err)
		}
	})
}

// TestLoadCheckpoint writes checkpoints inside transactions, as the consumer
// does, and reads them back: committed ones are visible, aborted ones are
// not, and a transaction open when the load starts is waited for.
func TestLoadCheckpoint(t *testing.T) {
	cluster, conn := newCluster(t)
	const topic = "checkpoints"
	ensure(t, conn, CheckpointTopic(topic, 4))
	ctx := testCtx(t)

	load := func(source string, p int32) (Checkpoint, bool) {
		t.Helper()
		c, found, err := LoadCheckpoint(ctx, conn, topic, source, p)
		if err != nil {
			t.Fatal(err)
		}
		return c, found
	}
	rec := func(c Checkpoint) *kgo.Record {
		_, p, err := ParseSource(c.Source)
		if err != nil {
			t.Fatal(err)
		}
		r, err := CheckpointRecord(topic, p, c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if _, found := load("events/2", 2); found {
		t.Fatal("checkpoint found in an empty topic")
	}

	w := newClient(t, conn,
		kgo.TransactionalID("worker-1"),
		kgo.RecordPartitioner(Partitioner(nil, topic)),
	)

	// Committed: visible, in the partition of its input partition.
	c100 := checkpointOf("events/2", 100, 10)
	txn(t, w, true, rec(c100), rec(checkpointOf("events/3", 7, 1)))
	c, found := load("events/2", 2)
	if !found || !sameCheckpoint(c, mustDecode(t, rec(c100))) {
		t.Fatalf("after commit: %+v, %v", c, found)
	}
	if _, found := load("events/2", 3); found {
		t.Fatal("events/2 found in partition 3")
	}

	// Aborted: invisible; the partition now ends in an abort marker and
	// the load must still finish.
	txn(t, w, false, rec(checkpointOf("events/2", 200, 20)))
	if c, _ := load("events/2", 2); c.Offset != 100 {
		t.Fatalf("after abort: offset %d, want 100", c.Offset)
	}

	txn(t, w, true, rec(checkpointOf("events/2", 300, 30)))
	if c, _ := load("events/2", 2); c.Offset != 300 {
		t.Fatalf("after second commit: offset %d, want 300", c.Offset)
	}

	// A transaction open when the load starts is waited for.
	if err := w.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, w, rec(checkpointOf("events/2", 400, 40)))
	type result struct {
		c   Checkpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, _, err := LoadCheckpoint(ctx, conn, topic, "events/2", 2)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("load returned while a transaction was open: %+v, %v", r.c, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := w.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.c.Offset != 400 {
		t.Fatalf("load across commit: %+v, %v", r.c, r.err)
	}

	// Compaction keeps the newest value of every key.
	cluster.Compact()
	all, err := LoadCheckpoints(ctx, conn, topic, map[string]int32{"events/2": 2, "events/3": 3, "events/0": 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["events/2"].Offset != 400 || all["events/3"].Offset != 7 {
		t.Fatalf("LoadCheckpoints after compaction = %+v", all)
	}

	// A tombstone forgets the source.
	produceSync(t, newClient(t, conn, kgo.RecordPartitioner(Partitioner(nil, topic))),
		&kgo.Record{Topic: topic, Partition: 3, Key: []byte("events/3")})
	if _, found := load("events/3", 3); found {
		t.Fatal("events/3 found after its tombstone")
	}
}

func mustDecode(t *testing.T, r *kgo.Record) Checkpoint {
	t.Helper()
	c, err := DecodeCheckpoint(string(r.Key), r.Value)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadCheckpointErrors(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, CheckpointTopic("ck", 2))
	ctx := testCtx(t)

	_, _, err := LoadCheckpoint(ctx, conn, "ck", "events/5", 5)
	var te *TopicError
	if !errors.Is(err, ErrTopicMismatch) || !errors.As(err, &te) || te.Topic != "ck" {
		t.Fatalf("partition 5 of 2: err = %v", err)
	}
	if _, _, err := LoadCheckpoint(ctx, conn, "missing", "events/0", 0); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("missing topic: err = %v", err)
	}
	if _, _, err := LoadCheckpoint(ctx, append(conn, kgo.ConsumerGroup("g")), "ck", "events/0", 0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("group client: err = %v", err)
	}

	// The newest record of a source is undecodable: fail, do not fall
	// back to an older checkpoint.
	p := newClient(t, conn, kgo.RecordPartitioner(Partitioner(nil, "ck")))
	good, _ := CheckpointRecord("ck", 1, checkpointOf("events/1", 5, 5))
	produceSync(t, p, good, &kgo.Record{Topic: "ck", Partition: 1, Key: []byte("events/1"), Value: []byte{7, 0}})
	_, _, err = LoadCheckpoint(ctx, conn, "ck", "events/1", 1)
	var re *RecordError
	if !errors.Is(err, ErrUnknownVersion) || !errors.As(err, &re) || re.Partition != 1 {
		t.Fatalf("corrupt newest: err = %v", err)
	}
}
