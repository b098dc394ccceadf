package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
)

// testSchemas is a fixed registry: ids to schemas, and ids it cannot
// answer for now.
type testSchemas struct {
	byID   map[int]Schema
	down   map[int]bool
	asked  map[int]int
	answer error // returned for the ids of down
}

func (s *testSchemas) Schema(id int) (Schema, error) {
	if s.asked == nil {
		s.asked = map[int]int{}
	}
	s.asked[id]++
	if s.down[id] {
		return Schema{}, s.answer
	}
	sch, ok := s.byID[id]
	if !ok {
		return Schema{}, fmt.Errorf("schema %d: %w", id, ErrUnknownSchema)
	}
	return sch, nil
}

// retryIn is an error that says when to retry.
type retryIn time.Duration

func (r retryIn) Error() string             { return "registry down" }
func (r retryIn) RetryAfter() time.Duration { return time.Duration(r) }

// frame returns payload in the wire format of schema id; index is the
// Protobuf message index (nil for Avro).
func frame(id int, index []int, payload []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	if index != nil {
		if len(index) == 1 && index[0] == 0 {
			b = append(b, 0)
		} else {
			b = binary.AppendVarint(b, int64(len(index)))
			for _, i := range index {
				b = binary.AppendVarint(b, int64(i))
			}
		}
	}
	return append(b, payload...)
}

// framedDecoder returns a decoder of topic "t" in format f with the
// event paths the tests use.
func framedDecoder(t testing.TB, f Format, s Schemas, opts ...Opt) *Decoder {
	t.Helper()
	d, err := NewDecoder(append([]Opt{WithFormat(f), WithSchemas(s),
		BudgetPath("campaign"), KeyPath("user.id"), IDPath("id"), TimePath("ts"),
		ScoreExpr("score * (1 + clicks)"), Paths("user.tier", "ref", "a")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decodeOne decodes and scores value with a scan of topic "t".
func decodeOne(d *Decoder, s *Scan, value []byte) (Decoded, error) {
	var got Decoded
	err := d.DecodeWith([]byte("rk"), value, time.UnixMilli(1), &got, s)
	if err == nil {
		err = d.Score(value, &got)
	}
	return got, err
}

// wantReason fails unless err is a RecordError of reason.
func wantReason(t *testing.T, name string, err error, reason Reason) {
	t.Helper()
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Errorf("%s: got %v, want reason %s", name, err, reason)
	}
}

func TestFramedConfig(t *testing.T) {
	if _, err := NewDecoder(WithFormat(FormatAvro)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("avro without schemas: %v", err)
	}
	s := &testSchemas{}
	if _, err := NewDecoder(WithFormat(FormatAvro), WithSchemas(s), KeyPath("users.#.id")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a gjson path on avro: %v", err)
	}
	if _, err := NewDecoder(TopicFormat("t", FormatProtobuf)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a protobuf topic without schemas: %v", err)
	}
	d, err := NewDecoder(TopicFormat("a", FormatAvro), TopicFormat("j", FormatJSON), WithFormat(FormatProtobuf), WithSchemas(s))
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]Format{"a": FormatAvro, "j": FormatJSON, "other": FormatProtobuf} {
		if got := d.FormatOf(topic); got != want {
			t.Errorf("FormatOf(%s) = %v, want %v", topic, got, want)
		}
	}
	for _, name := range Formats {
		if f, err := ParseFormat(name); err != nil || f.String() != name {
			t.Errorf("ParseFormat(%s) = %v, %v", name, f, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted")
	}
}

// TestFramedFaults checks what is not the payload's own fault: a missing
// magic byte, an unknown id, an unusable schema, a registry that cannot
// answer.
func TestFramedFaults(t *testing.T) {
	s := &testSchemas{byID: map[int]Schema{
		1: {Format: FormatAvro, Text: avroTestSchema},
		2: {Format: FormatAvro, Text: `{"type":"record","name":"R","fields":[{"name":"x","type":"nope"}]}`},
		3: {Format: FormatProtobuf, Text: protoTestSchema},
	}, down: map[int]bool{9: true}, answer: retryIn(250 * time.Millisecond)}
	d := framedDecoder(t, FormatAvro, s)
	sc := d.NewScan("t")
	good := avroEvent(t, map[string]any{"campaign": "spring"})
	cases := []struct {
		name   string
		value  []byte
		reason Reason
	}{
		{"empty", nil, ReasonEmptyValue},
		{"json", []byte(`{"campaign":"spring"}`), ReasonNotFramed},
		{"short", []byte{0, 0, 1}, ReasonNotFramed},
		{"unknown id", frame(7, nil, good), ReasonUnknownSchema},
		{"bad schema", frame(2, nil, good), ReasonBadSchema},
		{"protobuf schema", frame(3, nil, good), ReasonBadSchema},
		{"truncated", frame(1, nil, good[:len(good)-3]), ReasonSchemaMismatch},
		{"trailing", frame(1, nil, append(good, 0)), ReasonSchemaMismatch},
	}
	for _, c := range cases {
		_, err := decodeOne(d, sc, c.value)
		wantReason(t, c.name, err, c.reason)
	}
	_, err := decodeOne(d, sc, frame(9, nil, good))
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, ErrSchemaUnavailable) || we.ID != 9 || we.RetryAfter != 250*time.Millisecond {
		t.Fatalf("registry down: got %v", err)
	}
	if errors.Is(err, ErrBadRecord) {
		t.Fatal("a schema that could not be had makes a bad record")
	}
	// Asked again (not cached as bad) once the registry answers.
	delete(s.down, 9)
	s.byID[9] = s.byID[1]
	if got, err := decodeOne(d, sc, frame(9, nil, good)); err != nil || got.Budget != "spring" {
		t.Fatalf("after the registry came back: %+v, %v", got, err)
	}
	// Compiled once per id, whatever the number of records and scans.
	for range 3 {
		_, _ = decodeOne(d, d.NewScan("t"), frame(1, nil, good))
	}
	if s.asked[1] != 1 || s.asked[2] != 1 {
		t.Errorf("asked the registry %v times", s.asked)
	}
}

// anySchema is a registry that has the same schema under every id.
type anySchema struct{ s Schema }

func (a anySchema) Schema(int) (Schema, error) { return a.s, nil }

// TestFramedSchemasBounded decodes records of 3,000 distinct schema ids:
// the decoder keeps the plans of at most maxSchemas of them, and decodes
// every record.
func TestFramedSchemasBounded(t *testing.T) {
	d := framedDecoder(t, FormatAvro, anySchema{Schema{Format: FormatAvro, Text: avroTestSchema}})
	sc := d.NewScan("t")
	payload := avroEvent(t, nil)
	for id := range 3000 {
		if _, err := decodeOne(d, sc, frame(id+1, nil, payload)); err != nil {
			t.Fatalf("id %d: %v", id+1, err)
		}
	}
	if n := d.framed.byID.Len(); n > maxSchemas {
		t.Fatalf("%d schema plans kept, at most %d", n, maxSchemas)
	}
}
