package stats

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

func sampleLedger(part LedgerPart) LedgerRecord {
	r := LedgerRecord{Source: "events/3", Part: part, Seq: 42, At: t0, Offset: 1234}
	switch part {
	case LedgerSnapshot:
		r.Index, r.Chunks = 1, 3
	case LedgerDelta:
		r.Index = 7
	}
	if part != LedgerHeartbeat {
		rep := sampleReport()
		rep.Source, rep.At = r.Source, r.At
		r.Reports = []flow.Report{rep, {Budget: "all", Source: r.Source, At: r.At, Since: t1, Total: flow.Counters{Offered: 9, Passed: 1}, Cut: math.NaN()}}
		r.Variants = []VariantCounts{{Layer: "home", Experiment: "hero", Source: r.Source, At: r.At, Counts: []VariantCount{{Variant: "a", Count: 5, Keys: 2}, {Variant: "b", Count: 4, Keys: 4}}}}
		r.DroppedBudgets = []string{"old"}
		r.DroppedExperiments = []ExperimentID{{"home", "gone"}}
	}
	return r
}

// sameLedgerRecord compares two decoded records; entries in the order
// DecodeLedger returns them (sorted).
func sameLedgerRecord(a, b LedgerRecord) bool {
	if a.Source != b.Source || a.Part != b.Part || a.Index != b.Index || a.Deleted != b.Deleted ||
		a.Seq != b.Seq || !a.At.Equal(b.At) || a.Offset != b.Offset || a.Chunks != b.Chunks ||
		len(a.Reports) != len(b.Reports) || len(a.Variants) != len(b.Variants) ||
		!slices.Equal(a.DroppedBudgets, b.DroppedBudgets) || !slices.Equal(a.DroppedExperiments, b.DroppedExperiments) {
		return false
	}
	for i := range a.Reports {
		if !sameReport(a.Reports[i], b.Reports[i]) {
			return false
		}
	}
	for i, v := range a.Variants {
		w := b.Variants[i]
		if v.Layer != w.Layer || v.Experiment != w.Experiment || v.Source != w.Source || !v.At.Equal(w.At) || !slices.Equal(v.Counts, w.Counts) {
			return false
		}
	}
	return true
}

func sortedLedger(r LedgerRecord) LedgerRecord {
	r.Reports = slices.Clone(r.Reports)
	slices.SortFunc(r.Reports, func(a, b flow.Report) int { return cmpStrings(a.Budget, b.Budget) })
	return r
}

func cmpStrings(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) }

func TestLedgerKeyLayout(t *testing.T) {
	for _, c := range []struct {
		part  LedgerPart
		index uint32
		want  string
	}{
		{LedgerSnapshot, 2, "\x05\x00\x08events/3\x01\x00\x00\x00\x02"},
		{LedgerDelta, 0x01020304, "\x05\x00\x08events/3\x02\x01\x02\x03\x04"},
		{LedgerHeartbeat, 0, "\x05\x00\x08events/3\x03"},
	} {
		k, err := LedgerKey("events/3", c.part, c.index)
		if err != nil || string(k) != c.want {
			t.Fatalf("%v key = %q (%v), want %q", c.part, k, err, c.want)
		}
		src, part, index, err := parseLedgerKey(k)
		if err != nil || string(src) != "events/3" || part != c.part || index != c.index {
			t.Fatalf("parse %q: %s %v %d %v", k, src, part, index, err)
		}
	}
	if _, err := LedgerKey("events/3", LedgerHeartbeat, 1); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("heartbeat with index: %v", err)
	}
	if _, err := LedgerKey("", LedgerDelta, 1); !errors.Is(err, ErrInvalidReport) {
		t.Fatalf("empty source: %v", err)
	}
}

// TestLedgerValueLayout pins the bytes of a 1.1 delta: changing them needs
// a new version. A budget entry without a conversion fit is as in 1.0.
func TestLedgerValueLayout(t *testing.T) {
	r := LedgerRecord{Source: "s/0", Part: LedgerDelta, Seq: 5, At: time.Unix(1, 2), Offset: -1,
		Reports: []flow.Report{
			{Budget: "b", Since: time.Unix(3, 0), Total: flow.Counters{Offered: 7, Passed: 6}, Period: -1, InPeriod: flow.Counters{Passed: 1, Rewards: 1}},
			{Budget: "c", Since: time.Unix(3, 0), Total: flow.Counters{Offered: 7, Passed: 6}, Period: -1, Conversion: 0.5, RewardDelay: 3},
		}}
	_, v, err := EncodeLedger(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 1, 5, 2, 2, 1, 2, // version, seq, at (1 s, 2 ns), offset -1, 2 entries
		1, 18, 1, 'b', bodyInRewards, 6, 0, 7, 6, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // budget entry
		1, 20, 1, 'c', 0, 6, 0, 7, 6, 1, 0, 0, // budget entry, then its conversion fields:
		bodyConversion | bodyRewardDelay, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 6} // 0.5, 3 ns
	if !bytes.Equal(v, want) {
		t.Fatalf("value = % x\nwant    % x", v, want)
	}
}

// A 1.0 value (written before the conversion fields) decodes as it did;
// a 1.1 value decodes, for a 1.0 reader, to the same entries without the
// conversion fields (it skips what follows the fields it knows).
func TestLedgerMinorVersions(t *testing.T) {
	k, _ := LedgerKey("s/0", LedgerDelta, 0)
	v10 := []byte{1, 0, 5, 2, 2, 1, 1, 1, 10, 1, 'c', 0, 6, 0, 7, 6, 1, 0, 0}
	got, err := DecodeLedger(k, v10)
	if err != nil || len(got.Reports) != 1 || got.Reports[0].Total.Passed != 6 || got.Reports[0].Conversion != 0 {
		t.Fatalf("1.0 value: %+v, %v", got, err)
	}
	r := sampleLedger(LedgerDelta)
	r.Reports[0].Conversion, r.Reports[0].RewardDelay = 0.02, 15*time.Second
	_, v, err := EncodeLedger(r)
	if err != nil {
		t.Fatal(err)
	}
	_, now, err := decodeLedgerAs(ledgerMinor, LedgerDelta, 0, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, old, err := decodeLedgerAs(0, LedgerDelta, 0, v, nil)
	if err != nil || len(old) != len(now) {
		t.Fatalf("a 1.0 reader: %d entries (%v), want %d", len(old), err, len(now))
	}
	var fits int
	for i := range now {
		b := now[i].body
		if b.conv != 0 || b.delay != 0 {
			fits++
		}
		b.conv, b.delay = 0, 0
		if string(old[i].name) != string(now[i].name) || !old[i].body.equal(&b) {
			t.Errorf("entry %d: a 1.0 reader reads %+v, want %+v without the fit", i, old[i], now[i])
		}
	}
	if fits != 1 {
		t.Errorf("%d entries with a conversion fit, want 1", fits)
	}
	got, err = DecodeLedger(k, v)
	if rep := got.Reports[slices.IndexFunc(got.Reports, func(x flow.Report) bool { return x.Budget == r.Reports[0].Budget })]; err != nil ||
		rep.Conversion != 0.02 || rep.RewardDelay != 15*time.Second {
		t.Fatalf("round trip: %+v, %v", rep, err)
	}
}

func TestLedgerRoundTrip(t *testing.T) {
	for _, part := range []LedgerPart{LedgerSnapshot, LedgerDelta, LedgerHeartbeat} {
		r := sampleLedger(part)
		k, v, err := EncodeLedger(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeLedger(k, v)
		if err != nil || !sameLedgerRecord(got, sortedLedger(r)) {
			t.Fatalf("%v: got %+v (%v)\nwant %+v", part, got, err, sortedLedger(r))
		}
		rec, err := DecodeRecord(k, v)
		if err != nil || rec.Kind != KindLedger || !sameLedgerRecord(rec.Ledger, got) {
			t.Fatalf("DecodeRecord %v: %+v, %v", part, rec, err)
		}
		// A tombstone.
		tomb, err := DecodeLedger(k, nil)
		if err != nil || !tomb.Deleted || tomb.Source != r.Source || tomb.Part != part || tomb.Index != r.Index {
			t.Fatalf("tombstone: %+v, %v", tomb, err)
		}
	}
}

func TestLedgerEncodeRejects(t *testing.T) {
	for name, mod := range map[string]func(*LedgerRecord){
		"seq 0":            func(r *LedgerRecord) { r.Seq = 0 },
		"offset -2":        func(r *LedgerRecord) { r.Offset = -2 },
		"chunk past count": func(r *LedgerRecord) { r.Part, r.Index, r.Chunks = LedgerSnapshot, 3, 3 },
		"heartbeat entry":  func(r *LedgerRecord) { r.Part, r.Index = LedgerHeartbeat, 0 },
		"budget twice":     func(r *LedgerRecord) { r.DroppedBudgets = []string{r.Reports[0].Budget} },
		"empty budget":     func(r *LedgerRecord) { r.Reports[1].Budget = "" },
		"experiment twice": func(r *LedgerRecord) { r.DroppedExperiments = []ExperimentID{{"home", "hero"}} },
		"empty variant":    func(r *LedgerRecord) { r.Variants[0].Counts[0].Variant = "" },
		"unknown part":     func(r *LedgerRecord) { r.Part = 9 },
	} {
		r := sampleLedger(LedgerDelta)
		mod(&r)
		if _, _, err := EncodeLedger(r); !errors.Is(err, ErrInvalidReport) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestLedgerDecodeRejects feeds broken and foreign bytes: every one fails
// with a DecodeError, never a panic, and newer minors are skipped over.
func TestLedgerDecodeRejects(t *testing.T) {
	k, v, _ := EncodeLedger(sampleLedger(LedgerDelta))
	corrupt := func(name string, key, value []byte, sentinel error) {
		t.Helper()
		_, err := DecodeLedger(key, value)
		var de *DecodeError
		if !errors.Is(err, sentinel) || !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want %v", name, err, sentinel)
		}
	}
	for n := range len(v) {
		corrupt("value truncated", k, v[:n], ErrCorrupt)
	}
	for n := range len(k) {
		corrupt("key truncated", k[:n], v, ErrCorrupt)
	}
	corrupt("key trailing", append(bytes.Clone(k), 0), v, ErrCorrupt)
	corrupt("key part 4", append(append([]byte(nil), k[:len(k)-5]...), 4), v, ErrUnknownVersion)
	corrupt("kind 1 key", append([]byte{1}, k[1:]...), v, ErrUnknownVersion)
	corrupt("major 2", k, append([]byte{2}, v[1:]...), ErrUnknownVersion)
	corrupt("1.0 trailing", k, append(bytes.Clone(v), 0), ErrCorrupt)
	corrupt("seq 0", k, []byte{1, 0, 0, 0, 0, 1, 0}, ErrCorrupt)
	corrupt("offset -2", k, []byte{1, 0, 1, 0, 0, 3, 0}, ErrCorrupt)
	corrupt("too many entries", k, []byte{1, 0, 1, 0, 0, 1, 9, 1, 0}, ErrCorrupt)
	corrupt("unknown type in 1.0", k, []byte{1, 0, 1, 0, 0, 1, 1, 9, 0}, ErrCorrupt)
	corrupt("unknown flags", k, []byte{1, 0, 1, 0, 0, 1, 1, 1, 11, 1, 'b', 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrCorrupt)
	corrupt("unknown conversion flags in 1.1", k, []byte{1, 1, 1, 0, 0, 1, 1, 1, 11, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}, ErrCorrupt)
	corrupt("truncated conversion", k, []byte{1, 1, 1, 0, 0, 1, 1, 1, 11, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, ErrCorrupt)
	corrupt("1.1 entry trailing", k, []byte{1, 1, 1, 0, 0, 1, 1, 1, 13, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 6, 0}, ErrCorrupt)
	corrupt("out of order", k, []byte{1, 0, 1, 0, 0, 1, 2, 3, 2, 1, 'b', 3, 2, 1, 'a'}, ErrCorrupt)
	corrupt("repeated", k, []byte{1, 0, 1, 0, 0, 1, 2, 3, 2, 1, 'a', 3, 2, 1, 'a'}, ErrCorrupt)
	hb, _ := LedgerKey("events/3", LedgerHeartbeat, 0)
	corrupt("heartbeat with entries", hb, []byte{1, 0, 1, 0, 0, 1, 0}, ErrCorrupt)
	sk, _ := LedgerKey("events/3", LedgerSnapshot, 2)
	corrupt("chunk past count", sk, []byte{1, 0, 1, 0, 0, 1, 2, 0}, ErrCorrupt)

	// A 1.2 value: an unknown entry type and bytes after a known entry's
	// fields and after the value are skipped.
	newer := []byte{1, 2, 1, 0, 0, 1, 2,
		9, 2, 0xaa, 0xbb, // unknown type
		3, 3, 1, 'a', 0xcc, // dropped "a", one byte more
		0xdd} // after the entries
	got, err := DecodeLedger(k, newer)
	if err != nil || len(got.DroppedBudgets) != 1 || got.DroppedBudgets[0] != "a" {
		t.Fatalf("1.2: %+v, %v", got, err)
	}
}

// FuzzDecodeLedger checks that decoding arbitrary bytes never panics, fails
// only with a DecodeError, and that what decodes re-encodes to a record
// that decodes the same.
func FuzzDecodeLedger(f *testing.F) {
	for _, part := range []LedgerPart{LedgerSnapshot, LedgerDelta, LedgerHeartbeat} {
		k, v, _ := EncodeLedger(sampleLedger(part))
		f.Add(k, v)
	}
	k, _ := LedgerKey("s/0", LedgerDelta, 0)
	f.Add(k, []byte(nil))
	f.Add(k, []byte{1, 2, 1, 0, 0, 1, 2, 9, 2, 0xaa, 0xbb, 3, 3, 1, 'a', 0xcc, 0xdd})
	f.Add(k, []byte{1, 2, 1, 0, 0, 1, 1, 1, 14, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf2, 6, 0xee, 0xff})
	f.Add([]byte{5}, []byte{1, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := DecodeLedger(key, value)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || (!errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion)) {
				t.Fatalf("error %v is not a DecodeError with a sentinel", err)
			}
			return
		}
		k2, v2, err := EncodeLedger(r)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", r, err)
		}
		if !bytes.Equal(k2, key) {
			t.Fatalf("key %x re-encodes to %x", key, k2)
		}
		again, err := DecodeLedger(k2, v2)
		if err != nil || !sameLedgerRecord(again, r) {
			t.Fatalf("round trip %+v -> %+v (%v)", r, again, err)
		}
	})
}
