package decode

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/throttler/throttler/scoreexpr"
)

// FuzzDecodeScanAgrees checks the decoder's one-pass scanner against the
// slow path it falls back to (check, then gjson for every field): for any
// record both accept the same records with the same fields and score, and
// refuse the others for the same reason. Two decoders: one whose paths
// are all simple (the scanner captures them), one with a score expression
// and nested paths.
func FuzzDecodeScanAgrees(f *testing.F) {
	for _, s := range []string{
		`{"budget":"spring","user":"u","id":1,"score":2,"ts":5}`,
		`{"budget":"summer","user":"u\u00e9","id":"x","score":1e999,"ts":"2026-01-01T00:00:00Z"}`,
		`{"budget":"spring","user":{"a":1},"id":1}`, `{"budget":"spring","a":{"b":3},"id":[1]}`,
		`{"budget":"spring"`, `[]`, `null`, ``, "\xff", `{"budget":{"a":[[[[[[1]]]]]]}}`,
		`{"budget":"spring","score":-0,"id":1}`, `{"budget":"spring","user":null}`, `{"a":"\"}`,
		` {"budget" : "spring" , "id":"1", "ts": 1.5e3, "score": "3"} `, `{"budget":"spring","budget":"summer","id":1}`,
		`{"budget":"spr\u0069ng","id":1,"ts":-1}`, `{"budget":"spring","id":1,"ts":253402300800000}`,
	} {
		f.Add([]byte("key"), []byte(s))
	}
	simple, err := NewDecoder(KeyPath("user"), IDPath("id"), ScorePath("score"), TimePath("ts"), MaxDepth(5), MaxBytes(4096))
	if err != nil {
		f.Fatal(err)
	}
	nested, err := NewDecoder(KeyPath("user"), IDPath("id"), ScoreExpr("score * 2 + a.b"), TimePath("ts"), MaxDepth(5), MaxBytes(4096))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		for _, d := range []*Decoder{simple, nested} {
			checkScanAgrees(t, d, key, value)
		}
	})
}

// FuzzExprScanAgrees is FuzzDecodeScanAgrees over score expressions: for
// any expression that parses and any record, the score computed from the
// scanner's captured fields equals the one computed through gjson.
func FuzzExprScanAgrees(f *testing.F) {
	for _, c := range [][2]string{
		{"score * 2 + a.b", `{"budget":"spring","id":1,"score":2,"a":{"b":3}}`},
		{"log(1 + score) - min(a.b, 3)", `{"budget":"spring","id":1,"score":0.5,"a":{"b":-1}}`},
		{"clamp(x, 0, 1) * pow(y, 2)", `{"budget":"spring","id":1,"x":"7","y":1e200}`},
		{"`k-v` / z", `{"budget":"spring","id":1,"k-v":1,"z":0}`},
		{"sqrt(score)", `{"budget":"spring","id":1,"score":-4}`},
		{"a.b.c + a.b", `{"budget":"spring","id":1,"a":{"b":{"c":1}}}`},
	} {
		f.Add(c[0], []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, src string, value []byte) {
		if _, err := scoreexpr.ParseExpr(src); err != nil {
			return
		}
		d, err := NewDecoder(IDPath("id"), ScoreExpr(src), MaxDepth(6), MaxBytes(4096))
		if err != nil {
			return // e.g. too many fields for one expression
		}
		checkScanAgrees(t, d, nil, value)
	})
}

// checkScanAgrees decodes and scores value with d's one-pass scanner and
// with the slow path, and fails unless both give the same fields or the
// same refusal.
func checkScanAgrees(t *testing.T, d *Decoder, key, value []byte) {
	t.Helper()
	ts := time.UnixMilli(42)
	var fast, slow Decoded
	var buf [scanBuf]span
	res := d.results(&buf)
	scanned, errFast := d.decode(key, value, ts, &fast, res)
	if errFast == nil {
		fastSrc := values{doc: string(value)}
		errFast = d.score(&fastSrc, res, scanned, &fast)
	}
	slow.Clear()
	var errSlow error
	slowSrc := values{doc: string(value)}
	if reason := d.check(value); reason != "" {
		errSlow = recErr(StageDecode, reason, "", "")
	} else if errSlow = d.fields(key, ts, &slow, &slowSrc, nil, false); errSlow == nil {
		errSlow = d.score(&slowSrc, nil, false, &slow)
	}
	var rf, rs *RecordError
	switch {
	case errFast == nil && errSlow == nil:
		if fast.Budget != slow.Budget || fast.Key != slow.Key ||
			fast.ID != slow.ID || math.Float64bits(fast.Score) != math.Float64bits(slow.Score) || !fast.Time.Equal(slow.Time) {
			t.Fatalf("scanned %v: fast %+v, slow %+v", scanned, fast, slow)
		}
	case errors.As(errFast, &rf) && errors.As(errSlow, &rs):
		if rf.Reason != rs.Reason || rf.Stage != rs.Stage {
			t.Fatalf("scanned %v: fast %v, slow %v", scanned, errFast, errSlow)
		}
	default:
		t.Fatalf("scanned %v: fast %v (%+v), slow %v (%+v)", scanned, errFast, fast, errSlow, slow)
	}
}
