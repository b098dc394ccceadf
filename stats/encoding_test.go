package stats

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

var (
	t0 = time.Date(2026, 9, 18, 5, 43, 3, 123456789, time.UTC)
	t1 = t0.Add(-time.Hour)
)

func sampleReport() flow.Report {
	return flow.Report{
		Budget:   "campaign/spring",
		Source:   "events/3",
		At:       t0,
		Since:    t1,
		Total:    flow.Counters{Offered: 1000, Passed: 250, Rewards: 12.5},
		Period:   42,
		InPeriod: flow.Counters{Offered: 10, Passed: 3, Rewards: 0.25},
		Cut:      0.875,
	}
}

// sameReport compares reports field by field, times with Equal and rewards
// bit for bit (NaN round-trips).
func sameReport(a, b flow.Report) bool {
	sameC := func(x, y flow.Counters) bool {
		return x.Offered == y.Offered && x.Passed == y.Passed &&
			math.Float64bits(x.Rewards) == math.Float64bits(y.Rewards)
	}
	return a.Budget == b.Budget && a.Source == b.Source &&
		a.At.Equal(b.At) && a.Since.Equal(b.Since) &&
		sameC(a.Total, b.Total) && a.Period == b.Period && sameC(a.InPeriod, b.InPeriod) &&
		math.Float64bits(a.Cut) == math.Float64bits(b.Cut)
}

func TestKeyLayout(t *testing.T) {
	k, err := EncodeKey("b", "events/3")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("\x01\x00\x01b\x00\x08events/3")
	if !bytes.Equal(k, want) {
		t.Fatalf("key = %q, want %q", k, want)
	}
}

// TestValueLayout pins the 1.1 value layout: changing it needs a new version.
func TestValueLayout(t *testing.T) {
	r := flow.Report{
		At:       time.Unix(1, 2),
		Since:    time.Unix(-1, 0),
		Total:    flow.Counters{Offered: 300, Passed: 1, Rewards: 1},
		Period:   -2,
		InPeriod: flow.Counters{Offered: 0, Passed: 0, Rewards: 0},
		Cut:      0.5,
	}
	got := hex.EncodeToString(EncodeValue(r))
	want := "" +
		"0101" + // major 1, minor 1
		"02" + "02" + // At: zig-zag(1) = 2, 2 ns
		"01" + "00" + // Since: zig-zag(-1) = 1, 0 ns
		"ac02" + "01" + "000000000000f03f" + // Total: 300, 1, 1.0
		"03" + // Period: zig-zag(-2) = 3
		"00" + "00" + "0000000000000000" + // InPeriod
		"000000000000e03f" // Cut: 0.5
	if got != want {
		t.Fatalf("value = %s\nwant    %s", got, want)
	}
}

func TestReportRoundTrip(t *testing.T) {
	long := strings.Repeat("x", MaxNameLen)
	cases := []flow.Report{
		sampleReport(),
		{Budget: "a", Source: "s"}, // zero times and counters
		{Budget: "a/b", Source: "c", At: time.Unix(0, 0), Since: time.Unix(-62135596800, 0), Period: -1},
		{Budget: "nul\x00and\xffbytes", Source: "ünïcode/0", At: t0.In(time.FixedZone("X", 3600)),
			Total:  flow.Counters{Offered: MaxCount, Passed: MaxCount, Rewards: math.MaxFloat64},
			Period: math.MinInt64},
		{Budget: long, Source: long, Period: math.MaxInt64, At: time.Date(2262, 4, 11, 0, 0, 0, 999999999, time.UTC)},
	}
	for i, r := range cases {
		k, v, err := EncodeReport(r)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got, deleted, err := DecodeReport(k, v)
		if err != nil || deleted {
			t.Fatalf("case %d: deleted=%v err=%v", i, deleted, err)
		}
		if !sameReport(got, r) {
			t.Fatalf("case %d: got %+v\nwant %+v", i, got, r)
		}
		if got.At.Location() != time.UTC {
			t.Fatalf("case %d: decoded time not in UTC", i)
		}
	}
	// Counters no writer makes are corrupt: they would wrap or turn sums
	// infinite.
	for i, r := range []flow.Report{
		{Budget: "a", Source: "s", Total: flow.Counters{Offered: MaxCount + 1}},
		{Budget: "a", Source: "s", InPeriod: flow.Counters{Passed: math.MaxUint64}},
		{Budget: "a", Source: "s", Total: flow.Counters{Rewards: math.Inf(1)}},
		{Budget: "a", Source: "s", Total: flow.Counters{Rewards: -1}},
		{Budget: "a", Source: "s", InPeriod: flow.Counters{Rewards: math.NaN()}},
	} {
		if _, _, err := DecodeReport(must(EncodeReport(r))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bad counters %d: %v, want ErrCorrupt", i, err)
		}
	}
	// An instant outside int64 nanoseconds since 1970 is corrupt.
	for _, at := range []time.Time{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, _, err := DecodeReport(must(EncodeReport(flow.Report{Budget: "a", Source: "s", At: at}))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("an instant in %d: %v, want ErrCorrupt", at.Year(), err)
		}
	}
	// The zero time comes back as the zero value itself.
	got, _, _ := DecodeReport(must(EncodeReport(flow.Report{Budget: "a", Source: "s"})))
	if got.At != (time.Time{}) || !got.Since.IsZero() {
		t.Fatalf("zero time decoded as %v / %v", got.At, got.Since)
	}
}

func must(k, v []byte, err error) ([]byte, []byte) {
	if err != nil {
		panic(err)
	}
	return k, v
}

func TestKeysAreUnambiguous(t *testing.T) {
	pairs := [][2]string{{"a/b", "c"}, {"a", "b/c"}, {"ab", "c"}, {"a", "bc"}, {"a\x00", "b"}, {"a", "\x00b"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k, err := EncodeKey(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if q, dup := seen[string(k)]; dup {
			t.Fatalf("%q and %q share key %q", p, q, k)
		}
		seen[string(k)] = p
		b, s, err := DecodeKey(k)
		if err != nil || b != p[0] || s != p[1] {
			t.Fatalf("DecodeKey(%q) = %q, %q, %v", k, b, s, err)
		}
	}
}

func TestTombstone(t *testing.T) {
	k, _ := EncodeKey("b", "events/1")
	r, deleted, err := DecodeReport(k, nil)
	if err != nil || !deleted || r.Budget != "b" || r.Source != "events/1" {
		t.Fatalf("DecodeReport(tombstone) = %+v, %v, %v", r, deleted, err)
	}
	// An empty, non-nil value is not a tombstone; it is corrupt.
	if _, _, err := DecodeReport(k, []byte{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty value: err = %v, want ErrCorrupt", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	long := strings.Repeat("x", MaxNameLen+1)
	for _, c := range [][2]string{{"", "s"}, {"b", ""}, {long, "s"}, {"b", long}} {
		_, err := EncodeKey(c[0], c[1])
		var re *ReportError
		if !errors.Is(err, ErrInvalidReport) || !errors.As(err, &re) {
			t.Fatalf("EncodeKey(%.8q, %.8q) err = %v, want *ReportError", c[0], c[1], err)
		}
	}
}

func TestDecodeVersions(t *testing.T) {
	k, v, _ := EncodeReport(sampleReport())

	// Unknown key version.
	bad := append([]byte{2}, k[1:]...)
	_, _, err := DecodeReport(bad, v)
	var de *DecodeError
	if !errors.Is(err, ErrUnknownVersion) || !errors.As(err, &de) || de.What != "key" {
		t.Fatalf("key v2: err = %v", err)
	}

	// Unknown major value version.
	bad = append([]byte{2}, v[1:]...)
	if _, err := DecodeValue(bad); !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "major version 2") {
		t.Fatalf("value v2: err = %v", err)
	}

	// 1.1 with trailing bytes is corrupt ...
	if _, err := DecodeValue(append(bytes.Clone(v), 0x7f)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("1.1 + trailing: err = %v, want ErrCorrupt", err)
	}
	// ... while 1.2 may carry fields this build does not know.
	newer := append(bytes.Clone(v), 0x7f, 0x01, 0x02)
	newer[1] = 2
	got, err := DecodeValue(newer)
	want := sampleReport()
	want.Budget, want.Source = "", ""
	if err != nil || !sameReport(got, want) {
		t.Fatalf("1.2: got %+v, %v", got, err)
	}
	// A 1.0 value (no cut) still decodes, with the cut unknown.
	old := append([]byte{1, 0}, v[2:len(v)-8]...)
	got, err = DecodeValue(old)
	want.Cut = math.NaN()
	if err != nil || !sameReport(got, want) {
		t.Fatalf("1.0: got %+v, %v", got, err)
	}

	// Every truncation fails cleanly.
	for n := range len(v) {
		if _, err := DecodeValue(v[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("value truncated to %d bytes: err = %v", n, err)
		}
	}
	for n := range len(k) {
		if _, _, err := DecodeKey(k[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("key truncated to %d bytes: err = %v", n, err)
		}
	}
	// Trailing bytes after a key, and out-of-range nanoseconds.
	if _, _, err := DecodeKey(append(bytes.Clone(k), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("key + trailing: err = %v", err)
	}
	if _, err := DecodeValue([]byte{1, 0, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("1e9 ns: err = %v", err)
	}
}

// FuzzDecodeReport checks that decoding arbitrary bytes never panics, that a
// decoded key re-encodes to the same bytes (keys are canonical), and that a
// decoded value re-encodes to a value that decodes to the same report.
func FuzzDecodeReport(f *testing.F) {
	k, v, _ := EncodeReport(sampleReport())
	f.Add(k, v)
	k2, v2, _ := EncodeReport(flow.Report{Budget: "a", Source: "b", InPeriod: flow.Counters{Rewards: math.NaN()}})
	f.Add(k2, v2)
	f.Add(k, []byte(nil))
	f.Add([]byte{}, []byte{})
	f.Add([]byte{1, 0, 0}, []byte{1, 1})
	f.Add([]byte{1, 0xff, 0xff, 'a'}, []byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, deleted, err := DecodeReport(key, value)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || (!errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion)) {
				t.Fatalf("error %v is not a DecodeError with a sentinel", err)
			}
			return
		}
		k2, err := EncodeKey(r.Budget, r.Source)
		if err != nil || !bytes.Equal(k2, key) {
			t.Fatalf("key %x re-encodes to %x (%v)", key, k2, err)
		}
		if deleted {
			return
		}
		again, deleted2, err := DecodeReport(k2, EncodeValue(r))
		if err != nil || deleted2 || !sameReport(again, r) {
			t.Fatalf("round trip: %+v -> %+v (%v)", r, again, err)
		}
	})
}
