package stats

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// viewHolds reports how v differs from the committed ledgers of the
// owners' sources: every non-zero entry with the source's newest instant,
// nothing else.
func viewHolds(v *View, owners ...*owner) error {
	entries := 0
	for _, o := range owners {
		for src, d := range o.ds {
			st := d.l.State()
			if err := sourceHolds(v, src, st); err != nil {
				return err
			}
			entries += len(st.Reports)
		}
	}
	if n := v.Stats().Sources; n != entries {
		return fmt.Errorf("view holds %d entries, ledgers %d", n, entries)
	}
	return nil
}

// sourceHolds reports how v differs from one committed ledger.
func sourceHolds(v *View, src string, st LedgerState) error {
	info, ok := v.Source(src)
	if !ok || info.Seq != st.Seq || !info.At.Equal(st.At) || info.Offset != st.Offset || info.Budgets != len(st.Reports) {
		return fmt.Errorf("%s: view has %+v (%v), ledger seq %d at %v offset %d, %d budgets", src, info, ok, st.Seq, st.At, st.Offset, len(st.Reports))
	}
	for _, want := range st.Reports {
		got, ok := v.Report(want.Budget, src)
		if !ok || !sameReport(got, want) {
			return fmt.Errorf("%s %s: view has %+v (%v), want %+v", src, want.Budget, got, ok, want)
		}
	}
	return nil
}

// probeAbort checks, right after o's transaction aborted, that v shows
// o's committed ledgers and nothing of the abort: it commits an empty
// ledger of a probe source into each of o's partitions, and once v has
// read the probes, v has read past the abort too.
func probeAbort(t *testing.T, v *View, o *owner) {
	t.Helper()
	var recs []*kgo.Record
	want := map[string]uint64{}
	for src := range o.ds {
		_, p, _ := ParseSource(src)
		probe := SourceName("probe", p)
		l, err := NewLedger("stats", LedgerState{Source: probe, Offset: -1}, v.Seq(probe))
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Records(Changes{}, -1, t0)
		if err != nil {
			t.Fatal(err)
		}
		recs, want[probe] = append(recs, r...), l.Seq()
	}
	txn(t, o.cl, true, recs...)
	waitFor(t, "the probes", func() bool {
		for probe, seq := range want {
			if v.Seq(probe) != seq {
				return false
			}
		}
		return true
	})
	for src, d := range o.ds {
		if err := sourceHolds(v, src, d.l.State()); err != nil {
			t.Fatalf("after an abort: %v", err)
		}
	}
}

// TestViewLedgers follows two workers' ledgers through commits, aborts,
// heartbeats, a partition moving from one worker to the other, and
// compaction: the View always settles on exactly the committed ledgers,
// and a View started over the compacted topic has the same totals.
func TestViewLedgers(t *testing.T) {
	cluster, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 4))
	v := newView(t, conn, "stats")
	a, b := newOwner(t, conn, "worker-a"), newOwner(t, conn, "worker-b")
	for _, src := range []string{"events/0", "events/1", "rewards/1"} {
		a.ds[src] = newDriver(t, 80, newTestLedger(t, src, WithRecordBytes(MinRecordBytes), WithSnapshotFactor(1)))
	}
	b.ds["events/3"] = newDriver(t, 80, newTestLedger(t, "events/3", WithRecordBytes(MinRecordBytes)))
	for i := range 30 {
		a.step(3, i%6 != 4) // aborts, but not the last step before the move
		if i%6 == 4 {
			probeAbort(t, v, a)
		}
		b.step(2, true)
	}
	waitFor(t, "the view to hold the ledgers", func() bool { return viewHolds(v, a, b) == nil })

	// An idle source's heartbeat moves its instant, not its counters.
	d := b.ds["events/3"]
	budget := d.l.State().Reports[0].Budget
	before, _ := v.Report(budget, "events/3")
	d.now = d.now.Add(5 * time.Second)
	recs, err := d.l.Records(Changes{}, d.offset, d.now)
	if err != nil || len(recs) != 1 {
		t.Fatalf("heartbeat: %d records, %v", len(recs), err)
	}
	txn(t, b.cl, true, recs...)
	d.l.Committed()
	waitFor(t, "the heartbeat", func() bool { info, _ := v.Source("events/3"); return info.At.Equal(d.now) })
	after, _ := v.Report(budget, "events/3")
	if after.Total != before.Total || !after.At.Equal(d.now) || !before.At.Before(after.At) {
		t.Fatalf("before the heartbeat %+v, after %+v", before, after)
	}
	if err := viewHolds(v, a, b); err != nil {
		t.Fatal(err)
	}

	// events/1 moves from a to b: b continues above what the view saw.
	moved := a.ds["events/1"]
	states, err := LoadLedgers(testCtx(t), conn, "stats", "events/1")
	if err != nil {
		t.Fatal(err)
	}
	if moved.l, err = NewLedger("stats", states["events/1"], v.Seq("events/1"), WithRecordBytes(MinRecordBytes)); err != nil {
		t.Fatal(err)
	}
	delete(a.ds, "events/1")
	b.ds["events/1"] = moved
	for range 20 {
		a.step(3, true)
		b.step(3, true)
	}
	waitFor(t, "the view to follow the move", func() bool { return viewHolds(v, a, b) == nil })
	checkTotals(t, v, a, b)

	cluster.Compact()
	fresh := newView(t, conn, "stats")
	if err := fresh.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := viewHolds(fresh, a, b); err != nil {
		t.Fatalf("view over the compacted topic: %v", err)
	}
	checkTotals(t, fresh, a, b)
}

// checkTotals compares the View's cluster totals with the counters the
// drivers counted, budget by budget: no loss and no double count.
func checkTotals(t *testing.T, v *View, owners ...*owner) {
	t.Helper()
	want := map[string]flow.Counters{}
	for _, o := range owners {
		for _, d := range o.ds {
			for b, r := range d.counts {
				c := want[b]
				c.Offered += r.Total.Offered
				c.Passed += r.Total.Passed
				c.Rewards += r.Total.Rewards
				want[b] = c
			}
		}
	}
	seen := 0
	v.EachBudget("", func(bt BudgetTotals) bool {
		seen++
		if bt.Total != want[bt.Budget] {
			t.Errorf("%s: totals %+v, counted %+v", bt.Budget, bt.Total, want[bt.Budget])
		}
		return true
	})
	if seen != len(want) || len(v.Budgets()) != len(want) {
		t.Fatalf("EachBudget visited %d budgets, Budgets lists %d, counted %d", seen, len(v.Budgets()), len(want))
	}
}

// TestViewSkipsUnknownRecords puts ledgers and records of kinds and parts
// this build does not read on one topic (the reserved kinds 1 and 3, a
// future kind, a future ledger part, a newer major version): the ledgers
// show, and what the View cannot read is skipped and counted.
func TestViewSkipsUnknownRecords(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 3))
	t2 := t0.Add(time.Hour)
	var recs []*kgo.Record
	for src, c := range map[string]struct {
		at     time.Time
		passed uint64
	}{"events/1": {t2, 8}, "events/2": {t1, 3}} {
		r, err := newTestLedger(t, src).Records(Changes{
			Reports:  []flow.Report{{Budget: "b", Total: flow.Counters{Passed: c.passed}}, {Budget: "zero"}},
			Variants: []VariantCounts{{Layer: "l", Experiment: "e", Counts: []VariantCount{{Variant: "x", Count: 10}}}},
		}, 5, c.at)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r...)
	}
	future, _ := LedgerKey("events/1", LedgerHeartbeat, 0)
	future[len(future)-1] = 7
	cl := newClient(t, conn, kgo.RecordPartitioner(LedgerPartitioner(nil, "stats")))
	produceSync(t, cl, recs...)
	produceSync(t, cl,
		&kgo.Record{Topic: "stats", Key: []byte("\x01\x00\x01b\x00\x08events/0"), Value: []byte{1, 1}},          // kind 1
		&kgo.Record{Topic: "stats", Key: []byte("\x03\x00\x01l\x00\x01e\x00\x08events/1"), Value: []byte{1, 0}}, // kind 3
		&kgo.Record{Topic: "stats", Key: []byte{9, 0, 1, 'x'}, Value: []byte{1, 0}},
		&kgo.Record{Topic: "stats", Key: future, Value: []byte{1, 0}},
		&kgo.Record{Topic: "stats", Key: recs[0].Key, Value: []byte{2, 0}}, // a newer major
	)
	v := newView(t, conn, "stats")
	if err := v.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got := v.View("b", nil)
	want := []struct {
		src    string
		passed uint64
		at     time.Time
	}{{"events/1", 8, t2}, {"events/2", 3, t1}}
	if len(got) != len(want) {
		t.Fatalf("View(b) = %+v", got)
	}
	for i, w := range want {
		if got[i].Source != w.src || got[i].Total.Passed != w.passed || !got[i].At.Equal(w.at) {
			t.Fatalf("View(b)[%d] = %+v, want %+v", i, got[i], w)
		}
		if r, ok := v.Report("b", w.src); !ok || !sameReport(r, got[i]) {
			t.Fatalf("Report(b, %s) = %+v, %v", w.src, r, ok)
		}
	}
	if _, ok := v.Report("zero", "events/1"); ok || len(v.Budgets()) != 1 {
		t.Fatalf("a zero entry is kept, or budgets %v", v.Budgets())
	}
	if totals, n := v.VariantTotals("l", "e"); n != 2 || totals["x"].Count != 20 {
		t.Fatalf("variant totals %+v from %d sources", totals, n)
	}
	st := v.Stats()
	if st.Skipped != 5 || st.Budgets != 1 || st.Sources != 2 || !errors.Is(st.LastError, ErrUnknownVersion) {
		t.Fatalf("stats %+v", st)
	}
	if bt, ok := v.Totals("b"); !ok || bt.Sources != 2 || bt.Total.Passed != 11 || !bt.Oldest.Equal(t1) || !bt.Newest.Equal(t2) {
		t.Fatalf("totals %+v, %v", bt, ok)
	}
}
