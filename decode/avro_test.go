package decode

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/tidwall/gjson"
)

// avroTestSchema has every kind the plans read or skip: nested records,
// unions, an enum, an array, a map, a logical timestamp, recursion.
const avroTestSchema = `{"type":"record","name":"Event","namespace":"t","fields":[
 {"name":"id","type":"string"},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"user","type":{"type":"record","name":"User","fields":[
   {"name":"id","type":["null","string"],"default":null},
   {"name":"tier","type":{"type":"enum","name":"Tier","symbols":["FREE","PRO"]}}]}},
 {"name":"attrs","type":{"type":"map","values":"long"}},
 {"name":"campaign","type":"string"},
 {"name":"score","type":["null","double"],"default":null},
 {"name":"clicks","type":"int"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"next","type":["null","Event"],"default":null},
 {"name":"blob","type":{"type":"fixed","name":"Blob","size":3}}
]}`

var avroTestParsed = func() avro.Schema {
	s, err := avro.ParseWithCache(avroTestSchema, "", &avro.SchemaCache{})
	if err != nil {
		panic(err)
	}
	return s
}()

// avroEvent encodes an event of avroTestSchema: set overrides the
// defaults (a nested map for user; "score" a *float64).
func avroEvent(t testing.TB, set map[string]any) []byte {
	t.Helper()
	ev := map[string]any{"id": "e1", "tags": []any{"a", "b"},
		"user":  map[string]any{"id": map[string]any{"string": "u1"}, "tier": "PRO"},
		"attrs": map[string]any{"k": int64(3)}, "campaign": "summer", "score": map[string]any{"double": 0.5},
		"clicks": 3, "ts": time.UnixMilli(1700000000123), "next": nil, "blob": [3]byte{1, 2, 3}}
	for k, v := range set {
		ev[k] = v
	}
	b, err := avro.Marshal(avroTestParsed, ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAvroDecode(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{5: {Format: FormatAvro, Text: avroTestSchema}}}
	d := framedDecoder(t, FormatAvro, s)
	sc := d.NewScan("t")
	v := frame(5, nil, avroEvent(t, nil))
	got, err := decodeOne(d, sc, v)
	if err != nil {
		t.Fatal(err)
	}
	want := Decoded{Budget: "summer", Key: "u1", ID: "e1", Score: 2, Time: time.UnixMilli(1700000000123)}
	got.scan, got.scanBy = nil, nil
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if r := decodeField(t, d, sc, v, "user.tier"); r.Str != "PRO" {
		t.Errorf("enum: got %+v", r)
	}
	if r := decodeField(t, d, sc, v, "absent.path"); r.Exists() {
		t.Errorf("a path the decoder does not know: %+v", r)
	}

	// A null union branch is absent (as a JSON null): no key; a null
	// score is a missing field of the expression.
	v = frame(5, nil, avroEvent(t, map[string]any{"user": map[string]any{"id": nil, "tier": "FREE"}, "score": nil}))
	var dd Decoded
	if err := d.DecodeWith([]byte("rk"), v, time.Time{}, &dd, sc); err != nil || dd.Key != "" {
		t.Fatalf("null key: %+v, %v", dd, err)
	}
	_, err = decodeOne(d, sc, v)
	wantReason(t, "null score", err, ReasonExprField)
	_, err = decodeOne(d, sc, frame(5, nil, avroEvent(t, map[string]any{"id": "bad\xff"})))
	wantReason(t, "invalid UTF-8", err, ReasonInvalidUTF8)
}

// decodeField decodes v and returns the value at path.
func decodeField(t *testing.T, d *Decoder, sc *Scan, v []byte, path string) gjson.Result {
	t.Helper()
	var dd Decoded
	if err := d.DecodeWith(nil, v, time.Time{}, &dd, sc); err != nil {
		t.Fatal(err)
	}
	return dd.Field(v, path)
}

// TestAvroRecursionDepth refuses a recursive record nested deeper than
// MaxDepth, and reads one nested less deep.
func TestAvroRecursionDepth(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{5: {Format: FormatAvro, Text: avroTestSchema}}}
	d := framedDecoder(t, FormatAvro, s, MaxDepth(10))
	nest := func(n int) []byte {
		var next any
		for range n {
			ev := map[string]any{"id": "x", "tags": []any{}, "user": map[string]any{"id": nil, "tier": "FREE"},
				"attrs": map[string]any{}, "campaign": "spring", "score": nil, "clicks": 0,
				"ts": time.UnixMilli(0), "next": next, "blob": [3]byte{}}
			next = map[string]any{"t.Event": ev}
		}
		return frame(5, nil, avroEvent(t, map[string]any{"next": next}))
	}
	var dd Decoded
	if err := d.DecodeWith(nil, nest(8), time.Time{}, &dd, d.NewScan("t")); err != nil {
		t.Fatalf("9 levels: %v", err)
	}
	err := d.DecodeWith(nil, nest(10), time.Time{}, &dd, d.NewScan("t"))
	wantReason(t, "11 levels", err, ReasonTooDeep)
}

// TestAvroRoundTrip encodes random events with hamba/avro and checks that
// the plan reads back what was written, at every path.
func TestAvroRoundTrip(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{5: {Format: FormatAvro, Text: avroTestSchema}}}
	d := framedDecoder(t, FormatAvro, s, Paths("tags", "attrs", "user"))
	sc := d.NewScan("t")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		user := map[string]any{"id": nil, "tier": []string{"FREE", "PRO"}[rng.IntN(2)]}
		var key string
		if rng.IntN(4) > 0 {
			key = "u" + strconv.Itoa(rng.IntN(1000))
			user["id"] = map[string]any{"string": key}
		}
		budget := testBudgets[rng.IntN(2)]
		score := rng.Float64() * 10
		clicks := rng.IntN(100)
		ms := rng.Int64N(4e12)
		tags := []any{}
		for range rng.IntN(4) {
			tags = append(tags, strconv.Itoa(rng.IntN(99)))
		}
		v := frame(5, nil, avroEvent(t, map[string]any{"id": "e" + strconv.Itoa(i), "user": user, "campaign": budget,
			"score": map[string]any{"double": score}, "clicks": clicks, "ts": time.UnixMilli(ms), "tags": tags}))
		got, err := decodeOne(d, sc, v)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		wantScore := score * (1 + float64(clicks))
		if got.Budget != budget || got.Key != key || got.ID != "e"+strconv.Itoa(i) || got.Score != wantScore || got.Time.UnixMilli() != ms {
			t.Fatalf("event %d: got %+v, want %s %s %v %d", i, got, budget, key, wantScore, ms)
		}
		if r := got.Field(v, "user.tier"); r.Str != user["tier"] {
			t.Fatalf("event %d: tier %+v", i, r)
		}
		for _, p := range []string{"tags", "attrs", "user"} {
			if r := got.Field(v, p); r.Type != gjson.JSON {
				t.Fatalf("event %d: %s reads %+v, want a nested value", i, p, r)
			}
		}
	}
}

// FuzzAvroPayload feeds arbitrary payloads: the plan must not panic, and
// must accept exactly what hamba/avro decodes, but for the strings it
// reads, which must be UTF-8, and for bytes after the datum and the sizes
// of array and map blocks, which hamba does not check.
func FuzzAvroPayload(f *testing.F) {
	f.Add(avroEvent(f, nil))
	f.Add(avroEvent(f, map[string]any{"score": nil, "tags": []any{}}))
	f.Add([]byte{})
	s := &testSchemas{byID: map[int]Schema{5: {Format: FormatAvro, Text: avroTestSchema}}}
	d := framedDecoder(f, FormatAvro, s)
	f.Fuzz(func(t *testing.T, payload []byte) {
		var dd Decoded
		err := d.DecodeWith(nil, frame(5, nil, payload), time.Time{}, &dd, d.NewScan("t"))
		var re *RecordError
		refused := errors.As(err, &re) && (re.Reason == ReasonSchemaMismatch || re.Reason == ReasonTooDeep)
		var any map[string]any
		herr := boundedAvro.Unmarshal(avroTestParsed, payload, &any)
		switch {
		case errors.As(err, &re) && re.Reason == ReasonInvalidUTF8:
		case !refused && herr != nil:
			t.Fatalf("accepted (%v) what hamba/avro refuses: %v", err, herr)
		case refused && herr == nil && !strings.Contains(re.Detail, "after the datum") && !strings.Contains(re.Detail, "block"):
			t.Fatalf("refused (%v) what hamba/avro decodes: %v", err, any)
		}
	})
}

// boundedAvro does not allocate a slice of a count read from a fuzzed
// payload before its items are read.
var boundedAvro = avro.Config{MaxSliceAllocSize: 1 << 12, MaxByteSliceSize: 1 << 12}.Freeze()

// TestAvroFloatAndBytes reads a float, a long time in micros and bytes.
func TestAvroFloatAndBytes(t *testing.T) {
	const sch = `{"type":"record","name":"R","fields":[{"name":"campaign","type":"bytes"},
	 {"name":"score","type":"float"},{"name":"clicks","type":"long"},{"name":"id","type":"long"},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}]}`
	parsed := avro.MustParse(sch)
	s := &testSchemas{byID: map[int]Schema{1: {Format: FormatAvro, Text: sch}}}
	d := framedDecoder(t, FormatAvro, s)
	b, err := avro.Marshal(parsed, map[string]any{"campaign": []byte("spring"), "score": float32(1.5), "clicks": int64(1),
		"id": int64(-42), "ts": time.UnixMicro(1700000000123456)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeOne(d, d.NewScan("t"), frame(1, nil, b))
	if err != nil {
		t.Fatal(err)
	}
	if got.Budget != "spring" || got.Score != 3 || got.ID != "-42" || math.Abs(float64(got.Time.UnixMicro()-1700000000123456)) > 1 {
		t.Fatalf("got %+v", got)
	}
}
