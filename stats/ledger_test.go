package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// TestLedgerChainAndSnapshots runs 600 commits of 10 changed budgets out of
// 2,000 through a Ledger with small records: every record stays within the
// bound, deltas carry only what changed, snapshots come when the chain
// passes k times the snapshot, and what a reader folds (from the whole
// log, from the compacted log, with or without tombstones) is the writer's
// committed state.
func TestLedgerChainAndSnapshots(t *testing.T) {
	const k = 2
	l := newTestLedger(t, "events/7", WithRecordBytes(4<<10), WithSnapshotFactor(k))
	d := newDriver(t, 2000, l)
	maxDelta := 0
	for i := range 600 {
		c := Changes{Reports: d.touch(10)}
		if i%50 == 0 {
			c.Variants = []VariantCounts{{Layer: "l", Experiment: "e", Counts: []VariantCount{{Variant: "a", Count: uint64(i)}, {Variant: "b", Count: 1}}}}
		}
		before := d.deltaB
		d.commit(c)
		maxDelta = max(maxDelta, d.deltaB-before)
	}
	want := l.State()
	if len(want.Reports) < 1500 || len(want.Variants) != 1 {
		t.Fatalf("state has %d budgets and %d experiments", len(want.Reports), len(want.Variants))
	}
	for _, r := range want.Reports {
		if !sameReport(r, d.counts[r.Budget]) && !sameBody(r, d.counts[r.Budget]) {
			t.Fatalf("ledger holds %+v, counters are %+v", r, d.counts[r.Budget])
		}
	}
	if d.snapshot < 20 || d.deltas < 300 {
		t.Fatalf("%d snapshot chunks and %d deltas: the chain did not alternate", d.snapshot, d.deltas)
	}
	t.Logf("records %d (snapshot chunks %d, deltas %d), bytes %d (snapshots %d, deltas %d, last snapshot %d), largest %d", d.records, d.snapshot, d.deltas, d.written, d.snapB, d.deltaB, d.lastSnap, d.maxRec)
	// Amortised cost: the snapshots but the last cost at most 1/k of the
	// chains that triggered them.
	if bound := (d.deltaB + (d.snapshot+1)*maxDelta) / k; d.snapB-d.lastSnap > bound {
		t.Fatalf("snapshots wrote %d bytes (last %d), deltas %d: over the (1+1/k) bound %d", d.snapB, d.lastSnap, d.deltaB, bound)
	}
	for name, recs := range map[string]int{"whole log": len(d.log.recs)} {
		if err := sameLedger(foldRecords(t, "events/7", d.log.recs), want); err != nil {
			t.Fatalf("%s (%d records): %v", name, recs, err)
		}
	}
	for _, drop := range []bool{false, true} {
		live := d.log.compacted(drop)
		if err := sameLedger(foldRecords(t, "events/7", live), want); err != nil {
			t.Fatalf("compacted (tombstones dropped %v): %v", drop, err)
		}
		// What stays is bounded by the snapshot and about two chains.
		bytes := 0
		for _, r := range live {
			bytes += len(r.Key) + len(r.Value)
		}
		if bound := want.layout.snapBytes*(1+2*k) + 2*maxDelta; bytes > bound {
			t.Fatalf("compacted ledger holds %d bytes, snapshot %d: over (1+2k) x snapshot", bytes, want.layout.snapBytes)
		}
	}
}

// sameBody compares what a ledger keeps of a report (not Source nor At).
func sameBody(a, b flow.Report) bool {
	ba, bb := bodyOf(a), bodyOf(b)
	return a.Budget == b.Budget && ba.equal(&bb)
}

// TestLedgerCompactionWhileReading folds a log whose head was read before
// compaction ran and whose tail was read after it (the records of the tail
// that compaction kept), at every cut: the state is the writer's.
func TestLedgerCompactionWhileReading(t *testing.T) {
	l := newTestLedger(t, "events/1", WithRecordBytes(2<<10), WithSnapshotFactor(1))
	d := newDriver(t, 100, l)
	for i := range 1200 {
		c := Changes{Reports: d.touch(3)}
		if i%10 == 9 {
			// Drop a budget the ledger may hold (and which may come
			// back later, at a higher sequence).
			c.DropBudgets = []string{d.budgets[i%len(d.budgets)]}
			delete(d.counts, c.DropBudgets[0])
		}
		d.commit(c)
	}
	want := l.State()
	newest := map[string]int{}
	for i, r := range d.log.recs {
		newest[string(r.Key)] = i
	}
	for cut := 0; cut <= len(d.log.recs); cut += 3 {
		recs := append([]*kgo.Record(nil), d.log.recs[:cut]...)
		for i := cut; i < len(d.log.recs); i++ {
			if newest[string(d.log.recs[i].Key)] == i {
				recs = append(recs, d.log.recs[i])
			}
		}
		if err := sameLedger(foldRecords(t, "events/1", recs), want); err != nil {
			t.Fatalf("compaction after reading %d records: %v", cut, err)
		}
	}
}

// TestLedgerFoldIgnoresOrder folds the compacted records of a ledger without
// drops in many orders: highest sequence wins, and a complete snapshot
// sets the floor, in any order.
func TestLedgerFoldIgnoresOrder(t *testing.T) {
	l := newTestLedger(t, "events/2", WithRecordBytes(2<<10), WithSnapshotFactor(1))
	d := newDriver(t, 200, l)
	for range 150 {
		d.commit(Changes{Reports: d.touch(4)})
	}
	want := l.State()
	recs := d.log.compacted(false)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		if err := sameLedger(foldRecords(t, "events/2", recs), want); err != nil {
			t.Fatalf("shuffled: %v", err)
		}
	}
}

// TestLedgerDrops removes a budget and an experiment: readers drop them,
// also after compaction, and a drop of what the ledger lacks writes
// nothing.
func TestLedgerDrops(t *testing.T) {
	l := newTestLedger(t, "events/0")
	d := newDriver(t, 0, l)
	d.commit(Changes{
		Reports:  []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 1}}, {Budget: "b", Total: flow.Counters{Passed: 2}}},
		Variants: []VariantCounts{{Layer: "l", Experiment: "e", Counts: []VariantCount{{Variant: "x", Count: 4}}}},
	})
	d.commit(Changes{DropBudgets: []string{"a"}, DropExperiments: []ExperimentID{{"l", "e"}}})
	st := l.State()
	if len(st.Reports) != 1 || st.Reports[0].Budget != "b" || len(st.Variants) != 0 {
		t.Fatalf("state after drops: %+v", st)
	}
	for _, recs := range [][]*kgo.Record{d.log.recs, d.log.compacted(true)} {
		if err := sameLedger(foldRecords(t, "events/0", recs), st); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := l.Records(Changes{DropBudgets: []string{"a", "never"}}, d.offset, d.now)
	if err != nil || recs != nil {
		t.Fatalf("dropping what is gone: %d records, %v", len(recs), err)
	}
}

// TestLedgerAbort checks that an aborted transaction's changes are offered
// again (a newer value wins), that Rollback forgets them, and that Records
// refuses to run twice without an end.
func TestLedgerAbort(t *testing.T) {
	l := newTestLedger(t, "events/0")
	d := newDriver(t, 0, l)
	d.commit(Changes{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 1}}}})
	committed := l.State()

	c := Changes{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 2}}, {Budget: "b", Total: flow.Counters{Passed: 5}}}}
	if _, err := l.Records(c, 10, d.now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Records(c, 10, d.now); !errors.Is(err, ErrLedgerBusy) {
		t.Fatalf("second Records: err = %v", err)
	}
	l.Aborted()
	if err := sameLedger(l.State(), committed); err != nil {
		t.Fatalf("an abort changed the committed state: %v", err)
	}
	if !l.Due(d.now) {
		t.Fatal("changes offered again are not due")
	}
	// Offered again, with a newer value of a.
	recs, err := l.Records(Changes{Reports: []flow.Report{{Budget: "a", Total: flow.Counters{Passed: 3}}}}, 20, d.now)
	if err != nil || len(recs) != 1 {
		t.Fatalf("after abort: %d records, %v", len(recs), err)
	}
	got, err := DecodeLedger(recs[0].Key, recs[0].Value)
	if err != nil || len(got.Reports) != 2 || got.Reports[0].Total.Passed != 3 || got.Reports[1].Total.Passed != 5 || got.Seq != 3 {
		t.Fatalf("after abort the delta holds %+v (%v)", got, err)
	}
	l.Rollback()
	if recs, err := l.Records(Changes{}, committed.Offset, d.now); err != nil || recs != nil {
		t.Fatalf("after rollback: %d records, %v", len(recs), err)
	}
	if _, ok := l.Report("b"); ok || l.Seq() != 3 {
		t.Fatalf("rollback kept b, or seq %d went back", l.Seq())
	}
}

// TestLedgerHeartbeat steps an idle source through fixed instants: a
// heartbeat when the interval passed or the offset moved, nothing else.
func TestLedgerHeartbeat(t *testing.T) {
	l := newTestLedger(t, "events/4", WithHeartbeat(time.Second))
	steps := []struct {
		at     time.Duration
		offset int64
		want   LedgerPart // 0: nothing
	}{
		{0, -1, LedgerSnapshot}, // a new ledger starts with a snapshot
		{500 * time.Millisecond, -1, 0},
		{999 * time.Millisecond, -1, 0},
		{time.Second, -1, LedgerHeartbeat},
		{1100 * time.Millisecond, 7, LedgerHeartbeat}, // the offset moved
		{1200 * time.Millisecond, 7, 0},
		{2100 * time.Millisecond, 7, LedgerHeartbeat},
	}
	var seq uint64
	for i, s := range steps {
		now := t0.Add(s.at)
		if due := l.Due(now); s.offset == l.Offset() && due != (s.want != 0) {
			t.Fatalf("step %d: Due = %v", i, due)
		}
		recs, err := l.Records(Changes{}, s.offset, now)
		if err != nil {
			t.Fatal(err)
		}
		if s.want == 0 {
			if recs != nil {
				t.Fatalf("step %d: %d records, want none", i, len(recs))
			}
			continue
		}
		r, err := DecodeLedger(recs[0].Key, recs[0].Value)
		if err != nil || len(recs) != 1 || r.Part != s.want || !r.At.Equal(now) || r.Offset != s.offset || r.Seq <= seq {
			t.Fatalf("step %d: %d records, first %+v (%v)", i, len(recs), r, err)
		}
		seq = r.Seq
		l.Committed()
	}
}

// TestLedgerNewOwner moves a source between two writers: the second
// restores what the first committed (from the compacted log), continues
// the chain above the sequence a View saw, and readers see no gap and no
// double count.
func TestLedgerNewOwner(t *testing.T) {
	a := newTestLedger(t, "events/5", WithRecordBytes(2<<10))
	d := newDriver(t, 100, a)
	for range 40 {
		d.commit(Changes{Reports: d.touch(5)})
	}
	restored := foldRecords(t, "events/5", d.log.compacted(true))
	if err := sameLedger(restored, a.State()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if restored.layout.snapshotDue || !reflect.DeepEqual(restored.layout, a.State().layout) {
		t.Fatalf("restored layout %+v, writer's %+v", restored.layout, a.State().layout)
	}
	b, err := NewLedger("stats", restored, restored.Seq)
	if err != nil {
		t.Fatal(err)
	}
	d.l = b
	recs := d.commit(Changes{Reports: d.touch(5)})
	first, _ := DecodeLedger(recs[0].Key, recs[0].Value)
	if first.Part != LedgerDelta || first.Seq != restored.Seq+1 || first.Index != restored.layout.chain {
		t.Fatalf("new owner's first record: %+v", first)
	}
	for range 40 {
		d.commit(Changes{Reports: d.touch(5)})
	}
	if err := sameLedger(foldRecords(t, "events/5", d.log.recs), b.State()); err != nil {
		t.Fatal(err)
	}
	// A View that saw more than the restore: the new owner starts above
	// it, with a snapshot.
	c, _ := NewLedger("stats", b.State(), b.State().Seq+10)
	d.l = c
	recs = d.commit(Changes{})
	first, _ = DecodeLedger(recs[0].Key, recs[0].Value)
	if first.Part != LedgerSnapshot || first.Seq != b.State().Seq+11 {
		t.Fatalf("owner after a View's higher seq: %+v", first)
	}
	if err := sameLedger(foldRecords(t, "events/5", d.log.compacted(false)), c.State()); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerBounds checks the options and an entry too long for a record.
func TestLedgerBounds(t *testing.T) {
	for _, o := range []LedgerOpt{WithRecordBytes(MaxRecordBytes + 1), WithRecordBytes(100), WithSnapshotFactor(0), WithHeartbeat(0)} {
		if _, err := NewLedger("stats", LedgerState{Source: "events/0"}, 0, o); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("option accepted: %v", err)
		}
	}
	if _, err := NewLedger("stats", LedgerState{Source: "events"}, 0); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("source without partition: %v", err)
	}
	l := newTestLedger(t, "events/0", WithRecordBytes(MinRecordBytes))
	huge := Changes{Reports: []flow.Report{{Budget: strings.Repeat("x", MinRecordBytes), Total: flow.Counters{Passed: 1}}}}
	if _, err := l.Records(huge, 1, t0); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("entry over the bound: %v", err)
	}
	if _, err := l.Records(Changes{Reports: []flow.Report{{Total: flow.Counters{Passed: 1}}}}, 1, t0); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("empty budget: %v", err)
	}
	if recs, err := l.Records(Changes{}, 1, t0); err != nil || len(recs) != 1 {
		t.Fatalf("after failures: %d records, %v", len(recs), err)
	}
}

// TestLedgerSplitDeltaAndShrink writes a delta too large for one record
// (split over consecutive delta keys with one sequence), then a snapshot
// with fewer chunks than the one before (its extra chunk keys
// tombstoned): readers and a restore still see exactly the writer's state.
func TestLedgerSplitDeltaAndShrink(t *testing.T) {
	l := newTestLedger(t, "events/6", WithRecordBytes(MinRecordBytes), WithSnapshotFactor(64))
	d := newDriver(t, 2000, l)
	d.fill()
	chunks := l.State().layout.chunks
	recs := d.commit(Changes{Reports: d.touch(100)})
	if len(recs) < 3 {
		t.Fatalf("a delta of 100 entries in %d records of 1 KiB", len(recs))
	}
	for i, r := range recs {
		got, err := DecodeLedger(r.Key, r.Value)
		if err != nil || got.Part != LedgerDelta || got.Index != uint32(i) || got.Seq != recs0Seq(t, recs) {
			t.Fatalf("delta record %d: %+v (%v)", i, got, err)
		}
	}
	// Shrink: drop three quarters of the budgets with a small factor, so
	// that the next write is a snapshot of fewer chunks.
	shrink, err := NewLedger("stats", l.State(), 0, WithRecordBytes(MinRecordBytes), WithSnapshotFactor(0.01))
	if err != nil {
		t.Fatal(err)
	}
	d.l = shrink
	var drop []string
	for _, b := range d.budgets[:1500] {
		drop = append(drop, b)
		delete(d.counts, b)
	}
	recs = d.commit(Changes{DropBudgets: drop})
	tombs := 0
	for _, r := range recs {
		if _, part, index, _ := parseLedgerKey(r.Key); r.Value == nil && part == LedgerSnapshot && index >= shrink.State().layout.chunks {
			tombs++
		}
	}
	if now := shrink.State().layout.chunks; now >= chunks || tombs != int(chunks-now) {
		t.Fatalf("snapshot went from %d to %d chunks with %d chunk tombstones", chunks, now, tombs)
	}
	want := shrink.State()
	if len(want.Reports) != len(d.counts) {
		t.Fatalf("%d budgets after the drop, counted %d", len(want.Reports), len(d.counts))
	}
	for _, recs := range [][]*kgo.Record{d.log.recs, d.log.compacted(false), d.log.compacted(true)} {
		got := foldRecords(t, "events/6", recs)
		if err := sameLedger(got, want); err != nil {
			t.Fatal(err)
		}
		if got.layout.snapshotDue || got.layout.chunks != want.layout.chunks {
			t.Fatalf("restored layout %+v, writer's %+v", got.layout, want.layout)
		}
	}
}

func recs0Seq(t *testing.T, recs []*kgo.Record) uint64 {
	t.Helper()
	r, err := DecodeLedger(recs[0].Key, recs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return r.Seq
}

// TestLedgerStrayKeys restores a ledger whose partition also holds delta
// and chunk records with huge numbers (2^31, 2^32-1), which no writer
// makes: the next owner's snapshot tombstones those keys and no number
// between, so what it writes follows the keys that exist; and a restore
// of what it wrote then is its state.
func TestLedgerStrayKeys(t *testing.T) {
	d := newDriver(t, 200, newTestLedger(t, "events/4", WithRecordBytes(MinRecordBytes)))
	for range 30 {
		d.commit(Changes{Reports: d.touch(5)})
	}
	st := d.l.State()
	for _, r := range []LedgerRecord{
		{Part: LedgerDelta, Index: 1 << 31, Seq: 1, Offset: 10},
		{Part: LedgerDelta, Index: 1<<31 + 1, Seq: st.Seq + 1, Offset: 20},
		{Part: LedgerSnapshot, Index: math.MaxUint32 - 1, Chunks: math.MaxUint32, Seq: 2, Offset: 10},
	} {
		r.Source, r.At = "events/4", t0
		k, v, err := EncodeLedger(r)
		if err != nil {
			t.Fatal(err)
		}
		d.log.recs = append(d.log.recs, &kgo.Record{Topic: "stats", Partition: 4, Key: k, Value: v})
	}
	restored := foldRecords(t, "events/4", d.log.recs)
	if !restored.layout.snapshotDue || len(restored.layout.strays) != 3 {
		t.Fatalf("layout %+v: want a snapshot due and 3 stray keys", restored.layout)
	}
	l, err := NewLedger("stats", restored, restored.Seq)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records(Changes{}, restored.Offset, d.now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 200 {
		t.Fatalf("the snapshot wrote %d records", len(recs))
	}
	tomb := map[string]bool{}
	for _, r := range recs {
		if r.Value == nil {
			tomb[string(r.Key)] = true
		}
	}
	for _, k := range []struct {
		part  LedgerPart
		index uint32
	}{{LedgerDelta, 1 << 31}, {LedgerDelta, 1<<31 + 1}, {LedgerSnapshot, math.MaxUint32 - 1}} {
		key, _ := LedgerKey("events/4", k.part, k.index)
		if !tomb[string(key)] {
			t.Fatalf("%s %d not tombstoned", k.part, k.index)
		}
	}
	l.Committed()
	d.log.recs = append(d.log.recs, recs...)
	for _, log := range [][]*kgo.Record{d.log.recs, d.log.compacted(false), d.log.compacted(true)} {
		if err := sameLedger(foldRecords(t, "events/4", log), l.State()); err != nil {
			t.Fatalf("after the snapshot: %v", err)
		}
	}
}

// TestLedgerSequenceLimit checks that a writer never continues a sequence
// near MaxLedgerSeq, so that it never hands out one readers reject (or
// wraps to 0), and ignores a View's sequence there.
func TestLedgerSequenceLimit(t *testing.T) {
	st := LedgerState{Source: "events/1", Offset: 5, Seq: MaxLedgerSeq - LedgerSeqReserve + 1}
	if _, err := NewLedger("stats", st, 0); !errors.Is(err, ErrSequenceExhausted) {
		t.Fatalf("restored sequence in the reserve: %v", err)
	}
	st.Seq = 7
	l, err := NewLedger("stats", st, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records(Changes{}, 6, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if rec, err := DecodeLedger(r.Key, r.Value); err != nil || rec.Seq != 8 {
			t.Fatalf("record %+v (%v): want sequence 8", rec, err)
		}
	}
	st.Problems = []LedgerProblem{{Source: "events/1", Err: ErrCorrupt}}
	if _, err := NewLedger("stats", st, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("state with problems: %v", err)
	}
}
