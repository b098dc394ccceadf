package stats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

func sampleDefs() (BudgetDef, VariantCounts, ExperimentDef) {
	bd := BudgetDef{
		Budget: flow.Budget{Name: "spring", Target: 6000, Begin: t1, End: t0, Reserve: time.Second, Parent: "brand", Scored: true},
		At:     t0, Origin: "worker-1",
	}
	vc := VariantCounts{Layer: "ui", Experiment: "checkout", Source: "events/3", At: t0,
		Counts: []VariantCount{{"treatment", 51, 20}, {"control", 49, 21}}}
	ed := ExperimentDef{Layer: "ui", Experiment: "checkout", At: t0, Variants: []VariantDef{
		{Name: "treatment", Weight: 0.5, Topic: "exp-t", Limit: "variant:ui/checkout/treatment", Fallback: "output"},
		{Name: "control", Weight: 0.5, Topic: "exp-c"},
	}}
	return bd, vc, ed
}

func TestKindsRoundTrip(t *testing.T) {
	bd, _, ed := sampleDefs()
	pub, _ := NewPublisher("stats")
	recs := make([]*kgo.Record, 0, 2)
	for _, f := range []func() (*kgo.Record, error){
		func() (*kgo.Record, error) { return pub.BudgetRecord(bd) },
		func() (*kgo.Record, error) { return pub.ExperimentRecord(ed) },
	} {
		r, err := f()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}

	got, err := DecodeRecord(recs[0].Key, recs[0].Value)
	if err != nil || got.Kind != KindBudget || got.Deleted {
		t.Fatalf("budget: %+v, %v", got, err)
	}
	if g := got.Budget; !reflect.DeepEqual(g.Budget, bd.Budget) || !g.At.Equal(bd.At) || g.Origin != bd.Origin {
		t.Fatalf("budget def = %+v, want %+v", g, bd)
	}

	got, err = DecodeRecord(recs[1].Key, recs[1].Value)
	if err != nil || got.Kind != KindExperiment {
		t.Fatalf("experiment: %+v, %v", got, err)
	}
	wantVs := []VariantDef{ed.Variants[1], ed.Variants[0]}
	if g := got.Experiment; g.Layer != "ui" || g.Experiment != "checkout" || !reflect.DeepEqual(g.Variants, wantVs) {
		t.Fatalf("experiment def = %+v", g)
	}

	// Tombstones carry the identity only.
	got, err = DecodeRecord(recs[1].Key, nil)
	if err != nil || !got.Deleted || got.Experiment.Experiment != "checkout" || got.Experiment.Variants != nil {
		t.Fatalf("tombstone: %+v, %v", got, err)
	}

	// A newer minor version's trailing fields are skipped; in the minor
	// the record is written in (1.0, 1.1 for budgets) they are corrupt.
	for i, r := range recs {
		v := append([]byte(nil), r.Value...)
		v = append(v, 0xff)
		if _, err := DecodeRecord(r.Key, v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("record %d: 1.%d with a trailing byte: err = %v", i, v[1], err)
		}
		v[1]++
		if _, err := DecodeRecord(r.Key, v); err != nil {
			t.Errorf("record %d: 1.%d with a trailing byte: err = %v", i, v[1], err)
		}
		v[0] = 2
		if _, err := DecodeRecord(r.Key, v); !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("record %d: major 2: err = %v", i, err)
		}
	}
}

// TestKindLayouts pins the key layouts and the start of each value: a
// change needs a new kind or version.
func TestKindLayouts(t *testing.T) {
	k, _ := BudgetKey("b")
	if !bytes.Equal(k, []byte("\x02\x00\x01b")) {
		t.Fatalf("budget key = %q", k)
	}
	k, _ = ExperimentKey("l", "e")
	if !bytes.Equal(k, []byte("\x04\x00\x01l\x00\x01e")) {
		t.Fatalf("experiment key = %q", k)
	}
	// The variant counts of a ledger's experiment entry.
	v, _ := appendCounts(nil, "l/e", "s", []VariantCount{{"b", 300, 7}, {"a", 1, 1}})
	want := []byte{2, 1, 'a', 1, 1, 1, 'b', 0xac, 0x02, 7}
	if !bytes.Equal(v, want) {
		t.Fatalf("variant counts = %x, want %x", v, want)
	}
}

// TestUnknownKinds: DecodeRecord rejects the reserved kinds 1 and 3 and
// kinds above 6 as an unknown version, which readers skip.
func TestUnknownKinds(t *testing.T) {
	for _, k := range [][]byte{
		[]byte("\x01\x00\x01b\x00\x08events/3"),          // kind 1
		[]byte("\x03\x00\x01l\x00\x01e\x00\x08events/3"), // kind 3
		{9, 0, 1, 'x'},
	} {
		if _, err := DecodeRecord(k, []byte{1, 0}); !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("kind %d: err = %v", k[0], err)
		}
	}
}

func TestKindsRejectBadInput(t *testing.T) {
	_, vc, ed := sampleDefs()
	vc.Counts = append(vc.Counts, VariantCount{"control", 1, 1})
	if _, err := appendCounts(nil, "ui/checkout", vc.Source, vc.Counts); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("variant twice: err = %v", err)
	}
	ed.Variants[0].Weight = 0
	if _, _, err := EncodeExperimentDef(ed); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("zero weight: err = %v", err)
	}
	if _, err := BudgetKey(""); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("empty name: err = %v", err)
	}
	// A count past 2^53 (sums of them would wrap) decodes as corrupt.
	_, vc3, _ := sampleDefs()
	vc3.Counts[0].Count = MaxCount + 1
	lr := LedgerRecord{Source: vc3.Source, Part: LedgerDelta, Seq: 1, At: t0, Variants: []VariantCounts{vc3}}
	if lk, lv, err := EncodeLedger(lr); err != nil {
		t.Fatal(err)
	} else if _, err := DecodeRecord(lk, lv); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("count past 2^53: err = %v", err)
	}
	// Truncations of valid values never decode, and never panic.
	bd, _, ed2 := sampleDefs()
	r1, _ := (&Publisher{topic: "s"}).BudgetRecord(bd)
	r3, _ := (&Publisher{topic: "s"}).ExperimentRecord(ed2)
	for _, r := range []*kgo.Record{r1, r3} {
		for n := 0; n < len(r.Value); n++ {
			if _, err := DecodeRecord(r.Key, r.Value[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%q truncated to %d: err = %v", r.Key, n, err)
			}
		}
		for n := 1; n < len(r.Key); n++ {
			if _, err := DecodeRecord(r.Key[:n], r.Value); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("key %q truncated to %d: err = %v", r.Key, n, err)
			}
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	bd, _, ed := sampleDefs()
	for _, enc := range []func() ([]byte, []byte, error){
		func() ([]byte, []byte, error) { return EncodeBudgetDef(bd) },
		func() ([]byte, []byte, error) { return EncodeExperimentDef(ed) },
	} {
		k, v, _ := enc()
		f.Add(k, v)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := DecodeRecord(key, value)
		if err != nil || r.Deleted {
			return
		}
		// What decodes re-encodes to a value that decodes to the same.
		var k2, v2 []byte
		switch r.Kind {
		case KindBudget:
			k2, v2, err = EncodeBudgetDef(r.Budget)
		case KindExperiment:
			k2, v2, err = EncodeExperimentDef(r.Experiment)
		default:
			return
		}
		if err != nil {
			return // e.g. an origin name that decodes but is not a valid identity
		}
		r2, err := DecodeRecord(k2, v2)
		if err != nil || !reflect.DeepEqual(r2, r) && r.Kind != KindBudget {
			t.Fatalf("re-encoded %+v: %+v, %v", r, r2, err)
		}
	})
}

// TestViewKinds: a View keeps definitions beside the ledgers, sums the
// ledgers' variant counts over sources, applies tombstones and drops, and
// its flow view (reports) is unaffected.
func TestViewKinds(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 3))
	pub, _ := NewPublisher("stats")
	bd, vc, ed := sampleDefs()
	vc2 := vc
	vc2.Source = "events/4"
	vc2.Counts = []VariantCount{{"control", 1000, 10}}
	rec := func(r *kgo.Record, err error) *kgo.Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cl := newClient(t, conn)
	produceSync(t, cl,
		snapshotRecord(t, "stats", "events/3", 1, t0, []flow.Report{{Budget: "spring", Total: flow.Counters{Passed: 5}}}, vc),
		snapshotRecord(t, "stats", "events/4", 1, t0, nil, vc2),
		rec(pub.BudgetRecord(bd)), rec(pub.ExperimentRecord(ed)),
		&kgo.Record{Topic: "stats", Key: []byte{9, 0, 1, 'x'}, Value: []byte{1, 0}}, // a future kind
	)
	v := newView(t, conn, "stats")
	if err := v.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st := v.Stats(); st.Applied != 4 || st.Skipped != 1 || !errors.Is(st.LastError, ErrUnknownVersion) {
		t.Fatalf("stats = %+v", st)
	}
	if r, ok := v.Report("spring", "events/3"); !ok || r.Total.Passed != 5 {
		t.Fatalf("report = %+v, %v", r, ok)
	}
	if ds := v.BudgetDefs(); len(ds) != 1 || ds[0].Budget.Target != 6000 || ds[0].Budget.Parent != "brand" {
		t.Fatalf("budget defs = %+v", ds)
	}
	if es := v.ExperimentDefs(); len(es) != 1 || len(es[0].Variants) != 2 {
		t.Fatalf("experiment defs = %+v", es)
	}
	totals, n := v.VariantTotals("ui", "checkout")
	if n != 2 || totals["control"] != (VariantCount{"control", 1049, 31}) || totals["treatment"].Count != 51 {
		t.Fatalf("totals = %v over %d sources", totals, n)
	}
	if ss := v.VariantSources("ui", "checkout"); len(ss) != 2 || ss[0].Source != "events/3" {
		t.Fatalf("sources = %+v", ss)
	}

	// events/4 drops the experiment from its ledger; the budget's
	// definition is tombstoned.
	drop := ledgerRecord(t, "stats", LedgerRecord{Source: "events/4", Part: LedgerDelta, Seq: 2, At: t0, Offset: 2,
		DroppedExperiments: []ExperimentID{{"ui", "checkout"}}})
	bk, _ := BudgetKey("spring")
	produceSync(t, cl, drop, pub.TombstoneKey(bk))
	waitFor(t, "tombstones applied", func() bool {
		totals, n := v.VariantTotals("ui", "checkout")
		return n == 1 && totals["control"].Count == 49 && len(v.BudgetDefs()) == 0
	})
}

// A budget definition of 1.0 (before the reward prior) decodes, without a
// prior; one of 1.1 carries it.
func TestBudgetDefPrior(t *testing.T) {
	bd, _, _ := sampleDefs()
	bd.Budget.Rewards, bd.Budget.Scored = true, false
	bd.Budget.Conversion, bd.Budget.RewardDelay = 0.02, 15*time.Second
	k, v, err := EncodeBudgetDef(bd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(k, v)
	if err != nil || got.Budget.Budget.Conversion != 0.02 || got.Budget.Budget.RewardDelay != 15*time.Second {
		t.Fatalf("1.1: %+v, %v", got.Budget, err)
	}
	prior := 8 + len(binary.AppendVarint(nil, int64(bd.Budget.RewardDelay))) // float64, varint
	v10 := append([]byte{1, 0}, v[2:len(v)-prior]...)
	got, err = DecodeRecord(k, v10)
	if err != nil || got.Budget.Budget.Conversion != 0 || got.Budget.Budget.RewardDelay != 0 || got.Budget.Budget.Target != bd.Budget.Target || got.Budget.Origin != bd.Origin {
		t.Fatalf("1.0: %+v, %v", got.Budget, err)
	}
}

// TestBudgetDefCoversEveryField sets every field of flow.Budget and checks
// that a budget definition carries it: a field added to flow.Budget fails
// here until the encoding carries it (as a new flag bit, or a field of a
// new minor version).
func TestBudgetDefCoversEveryField(t *testing.T) {
	var b flow.Budget
	v := reflect.ValueOf(&b).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString("x" + v.Type().Field(i).Name)
		case float64:
			f.SetFloat(float64(i) + 0.5)
		case bool:
			f.SetBool(true)
		case time.Duration:
			f.SetInt(int64(i) * int64(time.Second))
		case time.Time:
			f.Set(reflect.ValueOf(t0.Add(time.Duration(i) * time.Hour)))
		default:
			t.Fatalf("flow.Budget.%s: type %s not handled by this test", v.Type().Field(i).Name, f.Type())
		}
	}
	_, val, err := EncodeBudgetDef(BudgetDef{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	// Every field set at once is no valid budget: read the fields
	// without flow's rules.
	got := BudgetDef{Budget: flow.Budget{Name: b.Name}} // the name is the key's
	if err := decodeBudgetFields(val, &got); err != nil || !reflect.DeepEqual(got.Budget, b) {
		t.Fatalf("round trip of %+v: %+v, %v", b, got.Budget, err)
	}
	// Readers skip a definition that breaks flow's rules.
	b = flow.Budget{Name: "huge", Target: 1.7e308, Period: time.Minute}
	k, val, err := EncodeBudgetDef(BudgetDef{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRecord(k, val); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a target of 1.7e308: %v", err)
	}
}
