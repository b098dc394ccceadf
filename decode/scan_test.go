package decode

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/throttler/throttler/internal/bytesconv"
)

// value returns the span's value in doc, as gjson would read it.
func (sp span) value(doc string) (v jval) {
	sp.into(doc, &v)
	return v
}

var scanTestPaths = []string{"a", "b", "a.b", "a.b.c", "x-y", "_k", "budget", "user"}

func newScanTestSet(t testing.TB) *pathSet {
	ps := &pathSet{}
	for i, p := range scanTestPaths {
		if got := ps.add(p); got != i {
			t.Fatalf("add(%q) = %d, want %d", p, got, i)
		}
	}
	return ps
}

func isObjectText(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// checkScan compares one scan with encoding/json (validity), scanDepth
// (depth) and gjson (captured values).
func checkScan(t *testing.T, ps *pathSet, v []byte, maxDepth int) {
	out := make([]span, len(ps.segs))
	ok := ps.scanObject(v, maxDepth, out)
	depth, _ := scanDepth(v, 1<<30)
	want := utf8.Valid(v) && json.Valid(v) && isObjectText(v) && depth <= maxDepth
	if ok != want {
		t.Fatalf("scanObject(%q, depth %d) = %v; want %v (utf8 %v, json.Valid %v, object %v, depth %d)",
			v, maxDepth, ok, want, utf8.Valid(v), json.Valid(v), isObjectText(v), depth)
	}
	if !ok {
		return
	}
	doc := string(v)
	for i, p := range scanTestPaths {
		got, want := out[i].value(doc), fromGJSON(gjson.Get(doc, p))
		if want.Type == gjson.String && strings.Contains(want.Raw, `\`) {
			// gjson mishandles a lone surrogate escape followed by
			// another escape; unescaping follows encoding/json.
			if err := json.Unmarshal([]byte(want.Raw), &want.Str); err != nil {
				t.Fatal(err)
			}
		}
		same := got.Type == want.Type && got.Raw == want.Raw && got.Str == want.Str &&
			(got.Num == want.Num || math.IsNaN(got.Num) && math.IsNaN(want.Num))
		if !same {
			t.Fatalf("%q path %q: scan %#v, gjson %#v", v, p, got, want)
		}
	}
}

func TestScanObject(t *testing.T) {
	ps := newScanTestSet(t)
	for _, s := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":{"b":{"c":"x"}}}`, `{"a":1,"a":2}`, `{"a":{"b":1},"a":{"b":2}}`,
		`{"a":[1,{"b":2}],"b":true,"x-y":null,"_k":false}`, `{"a":"\u00e9\"\\\/\b\f\n\r\t"}`,
		`{"a":"\ud83d\ude00","b":"\ud83d","budget":"\udc00x"}`, `{"\u0061":7}`, `{"a":-0,"b":1e999,"_k":-1.5e-3}`,
		`{"a":123456789012345678901234567890}`, `{"a":0.1,"b":-12345678901234}`, `{"user":"u","budget":"b"}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":"x`, `{"a":1,}`, `{,}`,
		`{"a" 1}`, `{"a":1 "b":2}`, `[1]`, `"x"`, `1`, ``, ` `, `{"a":"` + "\x01" + `"}`, `{"a":"` + "\xff" + `"}`,
		`{"a":[[[[1]]]]}`, `{"a":{"b":{"c":{"d":{}}}}}`, `{"a":1}x`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\xed\xa0\x80\"}",
	} {
		checkScan(t, ps, []byte(s), 4)
	}
}

func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{"a":{"b":{"c":"x"}},"b":[1,2,{"a":3}],"user":"u\u00e9"}`, `{"a":1,"a":{"b":2}}`,
		`{"budget":"spring","x-y":-0.5e10,"_k":null}`, `{"a":"\ud83d\ude00"}`, `{"a":[[[]]]}`,
	} {
		f.Add([]byte(s), uint8(4))
	}
	ps := newScanTestSet(f)
	f.Fuzz(func(t *testing.T, v []byte, depth uint8) {
		checkScan(t, ps, v, int(depth%40)+1)
	})
}

func TestSimplePath(t *testing.T) {
	for p, want := range map[string]bool{
		"a": true, "a.b": true, "user_id": true, "x-y.z9": true,
		"": false, "a..b": false, ".a": false, "a.0": false, "a*": false, "a?": false, "#": false,
		"a|b": false, "@this": false, `a\.b`: false, "a b": false,
	} {
		if got := simplePath(p) != nil; got != want {
			t.Errorf("simplePath(%q) simple = %v, want %v", p, got, want)
		}
	}
}

// scanBenchValue is a loadgen-shaped event for the decoding benchmarks.
var scanBenchValue = []byte(`{"id":"1-42","user":"user-3","budget":"summer","score":0.6046602879796196,"ts":1795341600000,"pad":"` + strings.Repeat("x", 60) + `"}`)

// BenchmarkScanDecode decodes with the one-pass scanner; compare it with
// BenchmarkScanDecodeGJSON, the same decoding through gjson, which is why
// the scanner exists: run both with -bench ScanDecode.
func BenchmarkScanDecode(b *testing.B) {
	d := newTestDecoder(b, KeyPath("user"), IDPath("id"), TimePath("ts"), BudgetPath("budget"))
	v := scanBenchValue
	var got Decoded
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(nil, v, time.Time{}, &got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanDecodeGJSON is the baseline of BenchmarkScanDecode: the
// decoder's slow path on the same record, which validates with gjson
// (ValidBytes, plus the UTF-8 and depth checks) and reads every field with
// gjson.Get, as the decoder did before the scanner and still does for a
// record the scanner refuses.
func BenchmarkScanDecodeGJSON(b *testing.B) {
	d := newTestDecoder(b, KeyPath("user"), IDPath("id"), TimePath("ts"), BudgetPath("budget"))
	v := scanBenchValue
	var got Decoded
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		got.Clear()
		if reason := d.check(v); reason != "" {
			b.Fatal(reason)
		}
		src := values{doc: bytesconv.String(v)}
		if err := d.fields(nil, time.Time{}, &got, &src, nil, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseNumberInts checks parseNumber's integers, whose eight-digit
// runs are read a word at a time, against strconv.
func TestParseNumberInts(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "12345678", "-12345678", "123456789", "99999999",
		"100000000", "1795341600000", "-1795341600000", "999999999999999", "-999999999999999",
		"9999999999999999", "12345678.5", "12345678e3", "1234567890123.25", "87654321E-2",
		"0.12345678", "-0.123456789", "1e10", "12345678901234567890"} {
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseNumber([]byte(s)); got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("parseNumber(%s) = %v, want %v", s, got, want)
		}
	}
	for n := int64(0); n < 2_000_000_000_000; n = n*3 + 7 {
		s := strconv.FormatInt(n, 10)
		if got := parseNumber([]byte(s)); got != float64(n) {
			t.Errorf("parseNumber(%s) = %v", s, got)
		}
	}
}

// TestSpecial checks that special finds the first byte of a word that is
// not plain, for every byte value at every position and for random words.
func TestSpecial(t *testing.T) {
	first := func(w [8]byte) int {
		for k, c := range w {
			if !plain[c] {
				return k
			}
		}
		return 8
	}
	check := func(w [8]byte) {
		got := 8
		if m := special(binary.LittleEndian.Uint64(w[:])); m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(w); got != want {
			t.Fatalf("special(%q): first byte %d, want %d", w[:], got, want)
		}
	}
	for k := range 8 {
		for c := range 256 {
			w := [8]byte{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
			w[k] = byte(c)
			check(w)
			for j := k + 1; j < 8; j++ { // a special byte above: the borrows
				w[j] = 0
			}
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		check(w)
	}
}
