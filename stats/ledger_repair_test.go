package stats

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// TestLedgerRepair writes a source's ledger, then bad records over two of
// its keys (another major version on the heartbeat, a delta with infinite
// rewards and a huge sequence on delta 0). The restore has problems; the
// inspection's Repaired is exactly what the owner committed (the good
// records the bad ones overwrote are still in the partition), and once the
// repair's records are written the restore has none and equals it, its
// sequence above every one seen. After compaction the overwritten records
// are gone: the inspection says which keys are lost.
func TestLedgerRepair(t *testing.T) {
	cluster, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	ctx := testCtx(t)
	a := newOwner(t, conn, "worker-a")
	d := newDriver(t, 50, newTestLedger(t, "events/2"))
	a.ds["events/2"] = d
	for range 8 {
		a.step(5, true)
	}
	a.step(0, true) // the offset moved, nothing changed: a heartbeat
	raw := newClient(t, conn, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	hb, _ := LedgerKey("events/2", LedgerHeartbeat, 0)
	_, badDelta, err := EncodeLedger(LedgerRecord{Source: "events/2", Part: LedgerDelta, Seq: 1 << 40, At: t0, Offset: 10,
		Reports: []flow.Report{{Budget: "campaign/000001", Total: flow.Counters{Offered: 1, Passed: 1, Rewards: math.Inf(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	d0, _ := LedgerKey("events/2", LedgerDelta, 0)
	produceSync(t, raw, &kgo.Record{Topic: "stats", Partition: 2, Key: hb, Value: []byte{2, 0}},
		&kgo.Record{Topic: "stats", Partition: 2, Key: d0, Value: badDelta})

	in, err := InspectLedger(ctx, conn, "stats", "events/2", -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Restore.Problems) != 2 || len(in.Lost) != 0 {
		t.Fatalf("restore problems %v, lost %v", in.Restore.Problems, in.Lost)
	}
	checkCounts(t, in.Repaired, d)
	recs, err := in.RepairRecords("stats", in.Repaired.Offset, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	txn(t, a.cl, true, recs...)
	states, err := LoadLedgers(ctx, conn, "stats", "events/2")
	if err != nil {
		t.Fatal(err)
	}
	st := states["events/2"]
	if len(st.Problems) != 0 || st.Seq <= in.MaxSeq {
		t.Fatalf("after the repair: problems %v, sequence %d (seen up to %d)", st.Problems, st.Seq, in.MaxSeq)
	}
	checkCounts(t, st, d)

	// Bad records again, then compaction removes what they overwrote.
	produceSync(t, raw, &kgo.Record{Topic: "stats", Partition: 2, Key: hb, Value: []byte{2, 0}})
	a.step(5, true) // the newest batch is never compacted
	cluster.Compact()
	in, err = InspectLedger(ctx, conn, "stats", "events/2", -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Lost) != 1 || in.Lost[0].Part != LedgerHeartbeat {
		t.Fatalf("after compaction: lost %v", in.Lost)
	}
}

// TestLedgerRepairSequenceReserve: a well-formed record with a sequence
// near the limit (which no writer reaches) is a problem of its source,
// and the repair leaves it out, tombstones its key and writes below it.
func TestLedgerRepairSequenceReserve(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	ctx := testCtx(t)
	a := newOwner(t, conn, "worker-a")
	d := newDriver(t, 50, newTestLedger(t, "events/1"))
	a.ds["events/1"] = d
	for range 4 {
		a.step(5, true)
	}
	k, v, err := EncodeLedger(LedgerRecord{Source: "events/1", Part: LedgerDelta, Index: 1 << 20, Seq: MaxLedgerSeq - 10, At: t0, Offset: 5})
	if err != nil {
		t.Fatal(err)
	}
	produceSync(t, newClient(t, conn, kgo.RecordPartitioner(kgo.ManualPartitioner())), &kgo.Record{Topic: "stats", Partition: 1, Key: k, Value: v})
	states, err := LoadLedgers(ctx, conn, "stats", "events/1")
	if err != nil {
		t.Fatal(err)
	}
	if ps := states["events/1"].Problems; len(ps) != 1 || !errors.Is(&ps[0], ErrSequenceExhausted) {
		t.Fatalf("problems %v", ps)
	}
	in, err := InspectLedger(ctx, conn, "stats", "events/1", -1)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := in.RepairRecords("stats", in.Repaired.Offset, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	txn(t, a.cl, true, recs...)
	if states, err = LoadLedgers(ctx, conn, "stats", "events/1"); err != nil || len(states["events/1"].Problems) != 0 {
		t.Fatalf("after the repair: %v, %v", err, states["events/1"].Problems)
	}
	checkCounts(t, states["events/1"], d)
}
