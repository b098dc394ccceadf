package decode

import (
	"errors"
	"testing"
	"time"

	"github.com/bytedance/sonic"
	sonicutf8 "github.com/bytedance/sonic/utf8"
)

// The decoder against the fastest Go JSON library: the same five fields
// (budget, key, id, score, time) extracted from the same record, with the
// whole record validated (syntax and UTF-8), by throttler's one-pass
// scanner and by bytedance/sonic. Run both together:
//
//	go test ./decode -run '^$' -bench ExtractFields -benchmem
//
// sonic's validating extraction is its JIT decoder into a struct of the
// five fields: skipped values are validated by default, ValidateString
// refuses control characters in strings, and sonic's own UTF-8
// validation of the record comes first, since the decoder refuses
// invalid UTF-8 and sonic's decoder does not. (Its searcher is no
// reference: with ValidateJSON it still accepts a syntax error after the
// fields it found, and trailing bytes.)

// extracted is what sonic decodes the record into.
type extracted struct {
	Budget string  `json:"budget"`
	User   string  `json:"user"`
	ID     string  `json:"id"`
	Score  float64 `json:"score"`
	TS     int64   `json:"ts"`
}

var sonicValidating = sonic.Config{ValidateString: true}.Froze()

func BenchmarkExtractFields(b *testing.B) {
	v := scanBenchValue
	b.Run("throttler", func(b *testing.B) {
		d := newTestDecoder(b, BudgetPath("budget"), KeyPath("user"), IDPath("id"), ScorePath("score"), TimePath("ts"))
		var got Decoded
		b.SetBytes(int64(len(v)))
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Decode(nil, v, time.Time{}, &got); err != nil {
				b.Fatal(err)
			}
			if err := d.Score(v, &got); err != nil {
				b.Fatal(err)
			}
		}
		if got.Budget != "summer" || got.Score == 0 {
			b.Fatalf("decoded %+v", got)
		}
	})
	b.Run("sonic-struct", func(b *testing.B) {
		var got extracted
		b.SetBytes(int64(len(v)))
		b.ReportAllocs()
		for b.Loop() {
			got = extracted{}
			if err := sonicExtract(v, &got); err != nil {
				b.Fatal(err)
			}
		}
		if got.Budget != "summer" || got.Score == 0 || got.TS == 0 {
			b.Fatalf("decoded %+v", got)
		}
	})
}

// sonicExtract is the struct variant of the reference.
func sonicExtract(v []byte, x *extracted) error {
	if !sonicutf8.Validate(v) {
		return errInvalidUTF8
	}
	return sonicValidating.Unmarshal(v, x)
}

var errInvalidUTF8 = errors.New("invalid UTF-8")

// TestSonicRefusesWhatTheDecoderRefuses checks that the reference
// validates as the decoder does: a syntax error in a skipped field and
// invalid UTF-8 are refused by both, so that the benchmark compares like
// with like.
func TestSonicRefusesWhatTheDecoderRefuses(t *testing.T) {
	d := newTestDecoder(t, BudgetPath("budget"), KeyPath("user"), IDPath("id"), ScorePath("score"), TimePath("ts"))
	for _, v := range []string{
		`{"budget":"summer","user":"u","id":"1","score":1,"ts":1,"pad":[1,}`,
		"{\"budget\":\"summer\",\"user\":\"\xff\",\"id\":\"1\",\"score\":1,\"ts\":1}",
		`{"budget":"summer","user":"u","id":"1","score":1,"ts":1} x`,
	} {
		var got Decoded
		if err := d.Decode(nil, []byte(v), time.Time{}, &got); err == nil {
			t.Errorf("decoder accepted %q", v)
		}
		var x extracted
		if err := sonicExtract([]byte(v), &x); err == nil {
			t.Errorf("sonic accepted %q", v)
		}
	}
}
