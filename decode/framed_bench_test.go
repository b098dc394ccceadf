package decode

import (
	"strconv"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The event of internal/tools/loadgen in each format, for the decode stage's
// cost per record by format.
const (
	benchAvroSchema = `{"type":"record","name":"Event","namespace":"throttler.loadgen","fields":[
 {"name":"id","type":"string"},{"name":"user","type":"string"},{"name":"campaign","type":"string"},
 {"name":"score","type":"double"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	benchProtoSchema = `syntax = "proto3";
package throttler.loadgen;
message Event { string id = 1; string user = 2; string campaign = 3; double score = 4; int64 ts = 5; }
`
	benchJSON = `{"id":"1-42","user":"user-3","campaign":"spring","score":0.6046602879796196,"ts":1795341600000}`
)

// benchValues returns the framed records of the bench event.
func benchValues(t testing.TB) (avroV, protoV []byte) {
	t.Helper()
	a, err := avro.Marshal(avro.MustParse(benchAvroSchema), map[string]any{"id": "1-42", "user": "user-3",
		"campaign": "spring", "score": 0.6046602879796196, "ts": time.UnixMilli(1795341600000)})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := compileProtoSchema(Schema{Format: FormatProtobuf, Text: benchProtoSchema})
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(ps.file.Messages().Get(0))
	set(m, "id", protoreflect.ValueOfString("1-42"))
	set(m, "user", protoreflect.ValueOfString("user-3"))
	set(m, "campaign", protoreflect.ValueOfString("spring"))
	set(m, "score", protoreflect.ValueOfFloat64(0.6046602879796196))
	set(m, "ts", protoreflect.ValueOfInt64(1795341600000))
	return frame(1, nil, a), frame(2, []int{0}, marshal(t, m))
}

// benchDecoders returns a decoder per format of the bench event's fields.
func benchDecoder(t testing.TB, f Format) *Decoder {
	t.Helper()
	s := &testSchemas{byID: map[int]Schema{1: {Format: FormatAvro, Text: benchAvroSchema}, 2: {Format: FormatProtobuf, Text: benchProtoSchema}}}
	d, err := NewDecoder(WithFormat(f), WithSchemas(s), BudgetPath("campaign"), KeyPath("user"),
		IDPath("id"), ScorePath("score"), TimePath("ts"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// BenchmarkDecodeFormats is the decode and score stages' work for one
// record of each format, as a partition does it (one Scan), schemas
// compiled once before the loop.
func BenchmarkDecodeFormats(b *testing.B) {
	av, pv := benchValues(b)
	for _, c := range []struct {
		f Format
		v []byte
	}{{FormatJSON, []byte(benchJSON)}, {FormatAvro, av}, {FormatProtobuf, pv}} {
		b.Run(c.f.String(), func(b *testing.B) {
			d := benchDecoder(b, c.f)
			s := d.NewScan("t")
			var got Decoded
			if err := d.DecodeWith(nil, c.v, time.Time{}, &got, s); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.v)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.DecodeWith(nil, c.v, time.Time{}, &got, s); err != nil {
					b.Fatal(err)
				}
				if err := d.Score(c.v, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFramedAllocs checks that decoding framed records allocates nothing
// but, now and then, a chunk of the arena of numbers' text.
func TestFramedAllocs(t *testing.T) {
	av, pv := benchValues(t)
	for f, v := range map[Format][]byte{FormatAvro: av, FormatProtobuf: pv} {
		d := benchDecoder(t, f)
		s := d.NewScan("t")
		var got Decoded
		const runs = 2000
		allocs := testing.AllocsPerRun(runs, func() {
			if err := d.DecodeWith(nil, v, time.Time{}, &got, s); err != nil {
				t.Fatal(err)
			}
			if err := d.Score(v, &got); err != nil {
				t.Fatal(err)
			}
		})
		// Each record writes two numbers (score, ts: under 40 bytes) into
		// chunks of arenaChunk bytes.
		if limit := float64(40) / arenaChunk; allocs > limit {
			t.Errorf("%v: %v allocations per record, want at most %v", f, allocs, limit)
		}
		if got.Budget != "spring" || got.Key != "user-3" || got.Time.UnixMilli() != 1795341600000 || strconv.FormatFloat(got.Score, 'g', -1, 64) != "0.6046602879796196" {
			t.Errorf("%v: got %+v", f, got)
		}
	}
}
