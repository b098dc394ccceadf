package stats

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// owner is a worker owning some sources: their drivers and its
// transactional client.
type owner struct {
	t  *testing.T
	cl *kgo.Client
	ds map[string]*driver
}

func newOwner(t *testing.T, conn []kgo.Opt, txnID string) *owner {
	return &owner{t: t, ds: map[string]*driver{},
		cl: newClient(t, conn, kgo.TransactionalID(txnID), kgo.RecordPartitioner(LedgerPartitioner(nil, "stats")))}
}

// step counts events on n budgets of every source, and commits (or
// aborts) one transaction with every source's records. After an abort the
// counters stay as they are: their changes are offered again.
func (o *owner) step(n int, commit bool) {
	o.t.Helper()
	var all []*kgo.Record
	for _, d := range o.ds {
		d.now = d.now.Add(time.Second)
		d.offset += 10
		recs, err := d.l.Records(Changes{Reports: d.touch(n)}, d.offset, d.now)
		if err != nil {
			o.t.Fatal(err)
		}
		all = append(all, recs...)
	}
	txn(o.t, o.cl, commit, all...)
	for _, d := range o.ds {
		if commit {
			d.l.Committed()
		} else {
			d.l.Aborted()
		}
	}
}

// checkCounts compares a restored ledger with the counters the driver
// counted: nothing lost, nothing counted twice.
func checkCounts(t *testing.T, st LedgerState, d *driver) {
	t.Helper()
	if len(st.Reports) != len(d.counts) {
		t.Fatalf("%s: %d budgets restored, %d counted", st.Source, len(st.Reports), len(d.counts))
	}
	for _, r := range st.Reports {
		if c := d.counts[r.Budget]; !sameBody(r, c) {
			t.Fatalf("%s: restored %+v, counted %+v", st.Source, r, c)
		}
	}
	if st.Offset != d.offset {
		t.Fatalf("%s: offset %d, want %d", st.Source, st.Offset, d.offset)
	}
}

// TestLoadLedgers writes the ledgers of three sources (two in stats
// partition 2) in transactions, some aborted, and restores them: exactly
// the committed state, also after compaction, and after the sources moved
// to a second writer that continued them.
func TestLoadLedgers(t *testing.T) {
	cluster, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	ctx := testCtx(t)
	a := newOwner(t, conn, "worker-a")
	for _, src := range []string{"events/2", "rewards/2", "events/1"} {
		a.ds[src] = newDriver(t, 150, newTestLedger(t, src, WithRecordBytes(MinRecordBytes), WithSnapshotFactor(1)))
	}
	for i := range 40 {
		a.step(4, i%7 != 6)
	}
	// Foreign records in partition 2: a record of a reserved kind (1)
	// and a ledger key of a part this build does not know.
	reserved := &kgo.Record{Topic: "stats", Partition: 2, Key: []byte("\x01\x00\x01b\x00\x08events/2"), Value: []byte{1, 1}}
	future, _ := LedgerKey("events/2", LedgerHeartbeat, 0)
	future[len(future)-1] = 9
	produceSync(t, newClient(t, conn, kgo.RecordPartitioner(kgo.ManualPartitioner())), reserved,
		&kgo.Record{Topic: "stats", Partition: 2, Key: future, Value: []byte("from the future")})

	load := func() map[string]LedgerState {
		t.Helper()
		states, err := LoadLedgers(ctx, conn, "stats", "events/2", "rewards/2", "events/1", "events/3")
		if err != nil {
			t.Fatal(err)
		}
		return states
	}
	check := func(states map[string]LedgerState, o *owner) {
		t.Helper()
		for src, d := range o.ds {
			if err := sameLedger(states[src], d.l.State()); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			checkCounts(t, states[src], d)
		}
	}
	states := load()
	check(states, a)
	if none := states["events/3"]; none.Seq != 0 || none.Offset != -1 || len(none.Reports) != 0 {
		t.Fatalf("a source without ledger: %+v", none)
	}
	before := countRecords(t, conn, "stats", 2)
	cluster.Compact()
	if after := countRecords(t, conn, "stats", 2); after >= before {
		t.Fatalf("compaction left %d of %d records", after, before)
	}
	check(load(), a)

	// events/2 moves to worker b, which continues above what it restored.
	b := newOwner(t, conn, "worker-b")
	st := states["events/2"]
	l, err := NewLedger("stats", st, st.Seq, WithRecordBytes(MinRecordBytes), WithSnapshotFactor(1))
	if err != nil {
		t.Fatal(err)
	}
	moved := a.ds["events/2"]
	moved.l = l
	b.ds["events/2"] = moved
	delete(a.ds, "events/2")
	for i := range 30 {
		b.step(4, i%5 != 3) // the last step commits
		a.step(2, true)
	}
	states = load()
	check(states, a)
	check(states, b)
	cluster.Compact()
	states = load()
	check(states, b)
}

// TestLoadLedgersErrors checks that a corrupt value of a requested source
// is a problem of that source only, and that a partition the topic lacks
// and a bad source name fail the load.
func TestLoadLedgersErrors(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	ctx := testCtx(t)
	bad, _ := LedgerKey("events/1", LedgerDelta, 0)
	produceSync(t, newClient(t, conn, kgo.RecordPartitioner(kgo.ManualPartitioner())), &kgo.Record{Topic: "stats", Partition: 1, Key: bad, Value: []byte{1, 0, 0}})
	states, err := LoadLedgers(ctx, conn, "stats", "events/1")
	if err != nil {
		t.Fatal(err)
	}
	var p *LedgerProblem
	if ps := states["events/1"].Problems; len(ps) != 1 || !errors.As(&ps[0], &p) || !errors.Is(p, ErrCorrupt) || p.Partition != 1 || p.Part != LedgerDelta {
		t.Fatalf("corrupt value: problems %v", ps)
	}
	if _, err := LoadLedgers(ctx, conn, "stats", "events/9"); !errors.Is(err, ErrTopicMismatch) {
		t.Fatalf("partition 9 of 4: %v", err)
	}
	if _, err := LoadLedgers(ctx, conn, "stats", "events"); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("source without partition: %v", err)
	}
}

// TestLoadLedgersHostile writes the ledgers of two sources that share a
// stats partition, then records no writer makes under the keys of one of
// them: a value of another major version, a sequence of 2^64-1, rewards
// that are not finite, a count past 2^53, an offset past the input
// partition's end. Each is a problem of that source alone (the other
// restores whole), and once the bad key is tombstoned it is none.
func TestLoadLedgersHostile(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	ctx := testCtx(t)
	a := newOwner(t, conn, "worker-a")
	for _, src := range []string{"events/2", "rewards/2"} {
		a.ds[src] = newDriver(t, 50, newTestLedger(t, src))
	}
	for range 5 {
		a.step(5, true)
	}
	raw := newClient(t, conn, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	heartbeat, _ := LedgerKey("events/2", LedgerHeartbeat, 0)
	delta, _ := LedgerKey("events/2", LedgerDelta, 0)
	forged := func(r LedgerRecord) []byte {
		r.Source, r.At = "events/2", t0
		_, v, err := EncodeLedger(r)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	maxSeq := binary.AppendUvarint([]byte{1, 1}, math.MaxUint64)
	maxSeq = append(appendTime(maxSeq, t0), 2) // offset 1
	ends := func(context.Context, []string) (map[string]int64, error) {
		return map[string]int64{"events/2": 1000, "rewards/2": 1000}, nil
	}
	for _, c := range []struct {
		name  string
		key   []byte
		value []byte
		want  error
	}{
		{"major version 2", heartbeat, []byte{2, 0}, ErrUnknownVersion},
		{"sequence 2^64-1", heartbeat, maxSeq, ErrCorrupt},
		{"rewards +Inf", delta, forged(LedgerRecord{Part: LedgerDelta, Seq: 99, Offset: 10,
			Reports: []flow.Report{{Budget: "campaign/000001", Total: flow.Counters{Offered: 1, Passed: 1, Rewards: math.Inf(1)}}}}), ErrCorrupt},
		{"count past 2^53", delta, forged(LedgerRecord{Part: LedgerDelta, Seq: 99, Offset: 10,
			Reports: []flow.Report{{Budget: "campaign/000001", Total: flow.Counters{Offered: math.MaxUint64}}}}), ErrCorrupt},
		{"offset 2^40", heartbeat, forged(LedgerRecord{Part: LedgerHeartbeat, Seq: 99, Offset: 1 << 40}), ErrBeyondEnd},
	} {
		produceSync(t, raw, &kgo.Record{Topic: "stats", Partition: 2, Key: c.key, Value: c.value})
		states, err := LoadLedgersWithin(ctx, conn, "stats", ends, "events/2", "rewards/2")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ps := states["events/2"].Problems; len(ps) != 1 || !errors.Is(&ps[0], c.want) {
			t.Fatalf("%s: problems %v, want one wrapping %v", c.name, ps, c.want)
		}
		checkCounts(t, states["rewards/2"], a.ds["rewards/2"])
		a.step(5, true)
		produceSync(t, raw, &kgo.Record{Topic: "stats", Partition: 2, Key: c.key})
		a.step(5, true)
		states, err = LoadLedgersWithin(ctx, conn, "stats", ends, "events/2", "rewards/2")
		if err != nil {
			t.Fatal(err)
		}
		if ps := states["events/2"].Problems; len(ps) != 0 {
			t.Fatalf("%s: after the key was tombstoned: problems %v", c.name, ps)
		}
	}
}

// countRecords counts the committed data records of a partition.
func countRecords(t *testing.T, conn []kgo.Opt, topic string, partition int32) int {
	t.Helper()
	n := 0
	if err := readToEnd(testCtx(t), conn, topic, "count", []int32{partition}, func(*kgo.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLedgerPartitioner checks that ledger records land in the partition
// they name while the other records of the stats topic keep key hashing.
func TestLedgerPartitioner(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 6))
	mixed := newClient(t, conn, kgo.RecordPartitioner(LedgerPartitioner(nil, "stats")))
	plain := newClient(t, conn)
	ctx := testCtx(t)
	for p := int32(0); p < 6; p++ {
		l := newTestLedger(t, SourceName("events", p))
		recs, err := l.Records(Changes{}, 1, t0)
		if err != nil {
			t.Fatal(err)
		}
		res := mixed.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil || res[0].Record.Partition != p {
			t.Fatalf("ledger of partition %d went to %d (%v)", p, res[0].Record.Partition, err)
		}
	}
	pub, _ := NewPublisher("stats")
	for i := range 20 {
		d := BudgetDef{Budget: flow.Budget{Name: SourceName("b", int32(i)), Target: 1}}
		r1, _ := pub.BudgetRecord(d)
		r2, _ := pub.BudgetRecord(d)
		a, b := mixed.ProduceSync(ctx, r1), plain.ProduceSync(ctx, r2)
		if a.FirstErr() != nil || b.FirstErr() != nil || a[0].Record.Partition != b[0].Record.Partition {
			t.Fatalf("definition %d: partition %d vs %d", i, a[0].Record.Partition, b[0].Record.Partition)
		}
	}
}
