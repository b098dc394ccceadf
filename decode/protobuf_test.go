package decode

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoTestSchema's Event is message index [1]: the index matters.
const protoTestSchema = `syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Other { string x = 1; }
message Event {
  string id = 1;
  User user = 2;
  string campaign = 3;
  repeated string tags = 4;
  map<string, int64> attrs = 5;
  optional double score = 6;
  int32 clicks = 7;
  google.protobuf.Timestamp ts = 8;
  google.protobuf.StringValue ref = 9;
  oneof kind { string a = 10; int64 b = 11; }
  message User { string id = 1; Tier tier = 2; }
  enum Tier { FREE = 0; PRO = 1; }
}
`

// protoEvent returns a new Event of protoTestSchema and its descriptor.
func protoEvent(t testing.TB) *dynamicpb.Message {
	t.Helper()
	ps, err := compileProtoSchema(Schema{Format: FormatProtobuf, Text: protoTestSchema})
	if err != nil {
		t.Fatal(err)
	}
	return dynamicpb.NewMessage(ps.file.Messages().ByName("Event"))
}

// set sets a field of m by path, making the messages on the way.
func set(m protoreflect.Message, path string, v protoreflect.Value) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(path))
	m.Set(fd, v)
}

func sub(m protoreflect.Message, name string) protoreflect.Message {
	return m.Mutable(m.Descriptor().Fields().ByName(protoreflect.Name(name))).Message()
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fullProtoEvent(t testing.TB) *dynamicpb.Message {
	m := protoEvent(t)
	set(m, "id", protoreflect.ValueOfString("e1"))
	set(m, "campaign", protoreflect.ValueOfString("summer"))
	set(m, "score", protoreflect.ValueOfFloat64(0.5))
	set(m, "clicks", protoreflect.ValueOfInt32(3))
	u := sub(m, "user")
	set(u, "id", protoreflect.ValueOfString("u1"))
	set(u, "tier", protoreflect.ValueOfEnum(1))
	ts := sub(m, "ts")
	set(ts, "seconds", protoreflect.ValueOfInt64(1700000000))
	set(ts, "nanos", protoreflect.ValueOfInt32(123000000))
	set(sub(m, "ref"), "value", protoreflect.ValueOfString("r1"))
	set(m, "a", protoreflect.ValueOfString("in a"))
	tags := m.Mutable(m.Descriptor().Fields().ByName("tags")).List()
	tags.Append(protoreflect.ValueOfString("x"))
	return m
}

func TestProtobufDecode(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{4: {Format: FormatProtobuf, Text: protoTestSchema}}}
	d := framedDecoder(t, FormatProtobuf, s, Paths("tags", "user.tier"))
	sc := d.NewScan("t")
	m := fullProtoEvent(t)
	v := frame(4, []int{1}, marshal(t, m))
	got, err := decodeOne(d, sc, v)
	if err != nil {
		t.Fatal(err)
	}
	want := Decoded{Budget: "summer", Key: "u1", ID: "e1", Score: 2, Time: time.UnixMilli(1700000000123)}
	got.scan, got.scanBy = nil, nil
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for path, want := range map[string]string{"user.tier": "PRO", "ref": "r1", "a": "in a"} {
		if r := decodeField(t, d, sc, v, path); r.Str != want {
			t.Errorf("%s: got %+v, want %q", path, r, want)
		}
	}
	if r := decodeField(t, d, sc, v, "tags"); r.Type != gjson.JSON {
		t.Errorf("a repeated field: %+v", r)
	}

	// Proto3 fields without presence read as their zero value; an
	// optional one (score) and a message (ts) are missing when absent.
	m = fullProtoEvent(t)
	set(sub(m, "user"), "tier", protoreflect.ValueOfEnum(0))
	m.Clear(m.Descriptor().Fields().ByName("clicks"))
	m.Clear(m.Descriptor().Fields().ByName("ref"))
	v = frame(4, []int{1}, marshal(t, m))
	if got, err = decodeOne(d, sc, v); err != nil || got.Score != 0.5 {
		t.Fatalf("clicks absent: %+v, %v", got, err)
	}
	if r := decodeField(t, d, sc, v, "user.tier"); r.Str != "FREE" {
		t.Errorf("zero enum: %+v", r)
	}
	if r := decodeField(t, d, sc, v, "ref"); r.Exists() {
		t.Errorf("absent wrapper: %+v", r)
	}
	m.Clear(m.Descriptor().Fields().ByName("score"))
	_, err = decodeOne(d, sc, frame(4, []int{1}, marshal(t, m)))
	wantReason(t, "optional score absent", err, ReasonExprField)
	m.Clear(m.Descriptor().Fields().ByName("ts"))
	_, err = decodeOne(d, sc, frame(4, []int{1}, marshal(t, m)))
	wantReason(t, "timestamp absent", err, ReasonMissingTime)

	// The wrong message: Other has none of the fields.
	_, err = decodeOne(d, sc, frame(4, []int{0}, marshal(t, m)))
	wantReason(t, "message Other", err, ReasonMissingBudget)
	_, err = decodeOne(d, sc, frame(4, []int{5}, marshal(t, m)))
	wantReason(t, "index 5", err, ReasonBadSchema)
	_, err = decodeOne(d, sc, append(frame(4, nil, nil), 0x80))
	wantReason(t, "no index", err, ReasonNotFramed)
	_, err = decodeOne(d, sc, frame(4, []int{1}, []byte{0x1a, 0x10, 'a'}))
	wantReason(t, "truncated string", err, ReasonSchemaMismatch)
}

// TestProtobufWireRules checks the rules of the wire format: the last
// scalar wins, setting a oneof member clears the other, a field of the
// wrong wire type is an unknown field, unknown fields are skipped.
func TestProtobufWireRules(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{4: {Format: FormatProtobuf, Text: protoTestSchema}}}
	d := framedDecoder(t, FormatProtobuf, s)
	sc := d.NewScan("t")
	base := marshal(t, fullProtoEvent(t))
	var b []byte
	b = append(b, base...)
	b = protowire.AppendTag(b, 3, protowire.BytesType) // campaign again
	b = protowire.AppendString(b, "spring")
	b = protowire.AppendTag(b, 11, protowire.VarintType) // oneof: b clears a
	b = protowire.AppendVarint(b, 7)
	b = protowire.AppendTag(b, 1, protowire.VarintType) // id of the wrong type
	b = protowire.AppendVarint(b, 9)
	b = protowire.AppendTag(b, 99, protowire.Fixed64Type) // unknown
	b = protowire.AppendFixed64(b, 1)
	v := frame(4, []int{1}, b)
	got, err := decodeOne(d, sc, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Budget != "spring" || got.ID != "e1" {
		t.Errorf("got %+v", got)
	}
	if r := decodeField(t, d, sc, v, "a"); r.Exists() {
		t.Errorf("oneof member a after b was set: %+v", r)
	}
}

// TestProtobufRoundTrip marshals random events with dynamicpb and checks
// that the plan reads back what was written.
func TestProtobufRoundTrip(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{4: {Format: FormatProtobuf, Text: protoTestSchema}}}
	d := framedDecoder(t, FormatProtobuf, s)
	sc := d.NewScan("t")
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		m := fullProtoEvent(t)
		key := "u" + strconv.Itoa(rng.IntN(1000))
		set(sub(m, "user"), "id", protoreflect.ValueOfString(key))
		budget := testBudgets[rng.IntN(2)]
		set(m, "campaign", protoreflect.ValueOfString(budget))
		score, clicks := rng.Float64()*10, int32(rng.IntN(100))
		set(m, "score", protoreflect.ValueOfFloat64(score))
		set(m, "clicks", protoreflect.ValueOfInt32(clicks))
		ms := rng.Int64N(4e12)
		set(sub(m, "ts"), "seconds", protoreflect.ValueOfInt64(ms/1000))
		set(sub(m, "ts"), "nanos", protoreflect.ValueOfInt32(int32(ms%1000)*1e6))
		set(m, "id", protoreflect.ValueOfString("e"+strconv.Itoa(i)))
		got, err := decodeOne(d, sc, frame(4, []int{1}, marshal(t, m)))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got.Budget != budget || got.Key != key || got.ID != "e"+strconv.Itoa(i) || got.Score != score*(1+float64(clicks)) || got.Time.UnixMilli() != ms {
			t.Fatalf("event %d: got %+v, want %s %s %d", i, got, budget, key, ms)
		}
	}
}

// FuzzProtobufPayload feeds arbitrary payloads: the plan must not panic,
// and must not refuse what proto.Unmarshal accepts. (It accepts more:
// messages no path enters are skipped by their length, unparsed.)
func FuzzProtobufPayload(f *testing.F) {
	f.Add(marshal(f, fullProtoEvent(f)))
	f.Add([]byte{})
	s := &testSchemas{byID: map[int]Schema{4: {Format: FormatProtobuf, Text: protoTestSchema}}}
	d := framedDecoder(f, FormatProtobuf, s)
	f.Fuzz(func(t *testing.T, payload []byte) {
		var dd Decoded
		err := d.DecodeWith(nil, frame(4, []int{1}, payload), time.Time{}, &dd, d.NewScan("t"))
		re, _ := err.(*RecordError)
		refused := re != nil && (re.Reason == ReasonSchemaMismatch || re.Reason == ReasonInvalidUTF8 || re.Reason == ReasonTooDeep)
		m := protoEvent(t)
		if perr := proto.Unmarshal(payload, m); perr == nil && refused {
			t.Fatalf("refused (%v) what proto.Unmarshal accepts", err)
		}
	})
}
