package decode

import (
	"errors"
	"strings"
	"testing"

	"time"

	"github.com/tidwall/gjson"
)

var testBudgets = []string{"spring", "summer"}

func newTestDecoder(t testing.TB, opts ...Opt) *Decoder {
	t.Helper()
	d, err := NewDecoder(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecodeValid(t *testing.T) {
	d := newTestDecoder(t, KeyPath("user"), IDPath("id"), ScorePath("score"), TimePath("ts"), RequireKey(true))
	ts := time.Unix(100, 0)
	var got Decoded
	v := []byte(`{"id":"e1","user":"u1","budget":"summer","score":0.5,"ts":1700000000123}`)
	if err := d.Decode([]byte("k"), v, ts, &got); err != nil {
		t.Fatal(err)
	}
	if err := d.Score(v, &got); err != nil {
		t.Fatal(err)
	}
	want := Decoded{Budget: "summer", Key: "u1", ID: "e1", Score: 0.5, Time: time.UnixMilli(1700000000123)}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	// numeric id and key, RFC 3339 time, record key fallback
	d2 := newTestDecoder(t, IDPath("id"), TimePath("ts"))
	v = []byte(`{"id":42,"budget":"spring","ts":"2026-01-02T03:04:05.5Z"}`)
	if err := d2.Decode([]byte("rk"), v, ts, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "42" || got.Key != "rk" || !got.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) || got.Score != 0 {
		t.Fatalf("got %+v", got)
	}

	// any budget name
	d3, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	if err := d3.Decode(nil, []byte(`{"budget":"x"}`), ts, &got); err != nil || got.Budget != "x" || got.Time != ts {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestDecodeBadRecords(t *testing.T) {
	full := []Opt{KeyPath("user"), RequireKey(true), IDPath("id"), TimePath("ts"), MaxBytes(200), MaxDepth(4)}
	deep := `{"budget":"spring","user":"u","id":1,"ts":1,"x":[[[[[1]]]]]}`
	cases := []struct {
		name   string
		key    string
		value  string
		opts   []Opt
		stage  string
		reason Reason
	}{
		{"empty", "", "", nil, StageDecode, ReasonEmptyValue},
		{"blank", "", "  \n", nil, StageDecode, ReasonEmptyValue},
		{"huge", "", `{"budget":"spring","pad":"` + strings.Repeat("x", 300) + `"}`, full, StageDecode, ReasonTooLarge},
		{"utf8", "", "{\"budget\":\"spr\xffing\"}", nil, StageDecode, ReasonInvalidUTF8},
		{"not json", "", `hello`, nil, StageDecode, ReasonNotJSON},
		{"trailing", "", `{"budget":"spring"}}`, nil, StageDecode, ReasonNotJSON},
		{"truncated", "", `{"budget":"spring","a":[1,2`, nil, StageDecode, ReasonTruncated},
		{"truncated string", "", `{"budget":"spr`, nil, StageDecode, ReasonTruncated},
		{"array", "", `[1,2]`, nil, StageDecode, ReasonNotObject},
		{"null", "", `null`, nil, StageDecode, ReasonNotObject},
		{"deep", "", deep, full, StageDecode, ReasonTooDeep},
		{"no budget", "", `{"a":1}`, nil, StageDecode, ReasonMissingBudget},
		{"null budget", "", `{"budget":null}`, nil, StageDecode, ReasonMissingBudget},
		{"numeric budget", "", `{"budget":7}`, nil, StageDecode, ReasonBudgetType},
		{"null key", "", `{"budget":"spring"}`, []Opt{RequireKey(true)}, StageDecode, ReasonMissingKey},
		{"missing key path", "k", `{"budget":"spring","user":null}`, []Opt{KeyPath("user"), RequireKey(true)}, StageDecode, ReasonMissingKey},
		{"object key", "", `{"budget":"spring","user":{}}`, []Opt{KeyPath("user")}, StageDecode, ReasonKeyType},
		{"no id", "", `{"budget":"spring"}`, []Opt{IDPath("id")}, StageDecode, ReasonMissingID},
		{"bool id", "", `{"budget":"spring","id":true}`, []Opt{IDPath("id")}, StageDecode, ReasonIDType},
		{"no time", "", `{"budget":"spring"}`, []Opt{TimePath("ts")}, StageDecode, ReasonMissingTime},
		{"array time", "", `{"budget":"spring","ts":[]}`, []Opt{TimePath("ts")}, StageDecode, ReasonTimeType},
		{"bad time", "", `{"budget":"spring","ts":"yesterday"}`, []Opt{TimePath("ts")}, StageDecode, ReasonBadTime},
		{"negative time", "", `{"budget":"spring","ts":-5}`, []Opt{TimePath("ts")}, StageDecode, ReasonBadTime},
		{"no score", "", `{"budget":"spring"}`, []Opt{ScorePath("score")}, StageScore, ReasonMissingScore},
		{"string score", "", `{"budget":"spring","score":"1"}`, []Opt{ScorePath("score")}, StageScore, ReasonScoreType},
		{"inf score", "", `{"budget":"spring","score":1e999}`, []Opt{ScorePath("score")}, StageScore, ReasonScoreNotFinite},
		{"negative score", "", `{"budget":"spring","score":-1}`, []Opt{ScorePath("score")}, StageScore, ReasonScoreNegative},
		{"expr nan", "", `{"budget":"spring","a":0}`, []Opt{ScoreExpr("a / a")}, StageScore, ReasonScoreNotFinite},
		{"expr negative", "", `{"budget":"spring","a":1}`, []Opt{ScoreExpr("0 - a")}, StageScore, ReasonScoreNegative},
		{"expr missing", "", `{"budget":"spring"}`, []Opt{ScoreExpr("a")}, StageScore, ReasonExprField},
		{"expr type", "", `{"budget":"spring","a":"1"}`, []Opt{ScoreExpr("a")}, StageScore, ReasonExprFieldType},
	}
	seen := map[Reason]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDecoder(t, c.opts...)
			var got Decoded
			v := []byte(c.value)
			var key []byte
			if c.key != "" {
				key = []byte(c.key)
			}
			err := d.Decode(key, v, time.Time{}, &got)
			if err == nil {
				err = d.Score(v, &got)
			}
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *RecordError", err)
			}
			if re.Stage != c.stage || re.Reason != c.reason {
				t.Fatalf("got %s/%s (%v), want %s/%s", re.Stage, re.Reason, err, c.stage, c.reason)
			}
			if !errors.Is(err, ErrBadRecord) {
				t.Fatal("does not wrap ErrBadRecord")
			}
		})
		seen[c.reason] = true
	}
	if len(seen) < 20 {
		t.Fatalf("only %d distinct reasons covered", len(seen))
	}
}

func TestDecoderConfigErrors(t *testing.T) {
	for _, opts := range [][]Opt{{BudgetPath("")}, {MaxBytes(0)}, {MaxDepth(-1)}, {ScoreExpr("1 +")}} {
		if _, err := NewDecoder(opts...); err == nil {
			t.Errorf("no error for %v", opts)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	d := newTestDecoder(t, KeyPath("user"), IDPath("id"), ScoreExpr("log(1 + clicks) * w"), TimePath("ts"))
	v := []byte(`{"id":"e1","user":"u1","budget":"summer","clicks":3,"w":0.5,"ts":1700000000123,"pad":{"a":[1,2,3]}}`)
	var got Decoded
	allocs := testing.AllocsPerRun(200, func() {
		if err := d.Decode(nil, v, time.Time{}, &got); err != nil {
			t.Fatal(err)
		}
		if err := d.Score(v, &got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode+Score allocate %v times", allocs)
	}
}

func BenchmarkDecode(b *testing.B) {
	d := newTestDecoder(b, KeyPath("user"), IDPath("id"), ScoreExpr("log(1 + clicks) * w"), TimePath("ts"))
	v := []byte(`{"id":"e1","user":"u1","budget":"summer","clicks":3,"w":0.5,"ts":1700000000123,"pad":"` + strings.Repeat("x", 100) + `"}`)
	var got Decoded
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Decode(nil, v, time.Time{}, &got)
		_ = d.Score(v, &got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"budget":"spring","user":"u","id":1,"score":2,"ts":5}`,
		`{"budget":"summer","user":"u\u00e9","id":"x","score":1e999,"ts":"2026-01-01T00:00:00Z"}`,
		`{"budget":"spring"`, `[]`, `null`, ``, "\xff", `{"budget":{"a":[[[[[[1]]]]]]}}`,
		`{"budget":"spring","score":-0}`, `{"budget":"spring","user":null}`, `{"a":"\"}`,
	} {
		f.Add([]byte("key"), []byte(s))
	}
	d, err := NewDecoder(KeyPath("user"), IDPath("id"), ScoreExpr("score * 2 + 1"), TimePath("ts"), MaxDepth(5), MaxBytes(4096))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		var got Decoded
		err := d.Decode(key, value, time.Time{}, &got)
		if err == nil {
			err = d.Score(value, &got)
		}
		if err != nil {
			var re *RecordError
			if !errors.As(err, &re) || re.Reason == "" || re.Stage == "" {
				t.Fatalf("error %v is not a complete *RecordError", err)
			}
			return
		}
		if got.Score < 0 || got.Score != got.Score {
			t.Fatalf("score %v", got.Score)
		}
	})
}

// TestUnixMilliFastPath checks that the time field's integer fast path
// answers as parseTime does, or leaves the value to it.
func TestUnixMilliFastPath(t *testing.T) {
	var ps pathSet
	ps.add("ts")
	for _, ts := range []string{"0", "-0", "7", "1700000000123", "253402300799999", "253402300800000",
		"999999999999999", "1000000000000000", "-5", "1.5", "1700000000123.0", "1e3", `"1"`, "null", "true"} {
		doc := `{"ts":` + ts + `}`
		out := make([]span, 1)
		if !ps.scanObject([]byte(doc), 8, out) {
			t.Fatalf("scan %s", doc)
		}
		ms, ok := out[0].unixMilli(doc)
		if !ok {
			continue
		}
		v := out[0].value(doc)
		want, reason := parseTime(&v)
		if reason != "" || !time.UnixMilli(ms).Equal(want) {
			t.Errorf("%s: fast path %d, parseTime %v %q", ts, ms, want, reason)
		}
	}
	if _, ok := (&span{typ: gjson.Number, start: 6, end: 21}).unixMilli(`{"ts":253402300800000}`); ok {
		t.Error("beyond maxUnixMilli taken")
	}
}
