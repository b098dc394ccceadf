package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
)

// The events in Avro and Protobuf: the same fields as the JSON object,
// ts a timestamp-millis long (Avro) or an int64 of Unix milliseconds
// (Protobuf). Field paths are the same in every format.
const (
	AvroSchema = `{"type":"record","name":"Event","namespace":"throttler.loadgen","fields":[
 {"name":"id","type":"string"},
 {"name":"user","type":"string"},
 {"name":"campaign","type":"string"},
 {"name":"score","type":"double"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	ProtobufSchema = `syntax = "proto3";
package throttler.loadgen;

message Event {
  string id = 1;
  string user = 2;
  string campaign = 3;
  double score = 4;
  int64 ts = 5; // Unix milliseconds
}
`
)

// Formats of Encoder.
const (
	FormatJSON     = "json"
	FormatAvro     = "avro"
	FormatProtobuf = "protobuf"
)

// Encoder writes events in one format; Avro and Protobuf events are
// framed for a schema registry's id (magic byte 0, the id, for Protobuf
// the message index). The zero value writes JSON.
type Encoder struct {
	format string
	header []byte
}

// ErrFormat is wrapped by the errors of unknown formats and of events
// that do not decode.
var ErrFormat = errors.New("event format")

// Register registers the schema of format (avro or protobuf) under
// subject ("<topic>-value" by convention) with the registry of cl, and
// returns the encoder of its id. JSON needs no registry: the zero
// Encoder.
func Register(ctx context.Context, cl *sr.Client, subject, format string) (Encoder, error) {
	s := sr.Schema{Schema: AvroSchema, Type: sr.TypeAvro}
	switch format {
	case FormatAvro:
	case FormatProtobuf:
		s = sr.Schema{Schema: ProtobufSchema, Type: sr.TypeProtobuf}
	default:
		return Encoder{}, fmt.Errorf("%w: %q needs no registry (want avro or protobuf)", ErrFormat, format)
	}
	ss, err := cl.CreateSchema(ctx, subject, s)
	if err != nil {
		return Encoder{}, fmt.Errorf("register the %s schema as %s: %w", format, subject, err)
	}
	return NewEncoder(format, ss.ID)
}

// NewEncoder returns the encoder of format for schema id (ignored for
// JSON).
func NewEncoder(format string, id int) (Encoder, error) {
	h := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[1:], uint32(id))
	switch format {
	case FormatJSON, "":
		return Encoder{}, nil
	case FormatAvro:
		return Encoder{format: FormatAvro, header: h}, nil
	case FormatProtobuf:
		return Encoder{format: FormatProtobuf, header: append(h, 0)}, nil // message index [0]
	}
	return Encoder{}, fmt.Errorf("%w: want json, avro or protobuf, got %q", ErrFormat, format)
}

// Format returns the encoder's format.
func (enc Encoder) Format() string {
	if enc.format == "" {
		return FormatJSON
	}
	return enc.format
}

// Append appends e, encoded, to dst.
func (enc Encoder) Append(dst []byte, e *Event) []byte {
	switch enc.format {
	case FormatAvro:
		return e.appendAvro(append(dst, enc.header...))
	case FormatProtobuf:
		return e.appendProtobuf(append(dst, enc.header...))
	}
	return e.AppendJSON(dst)
}

func (e *Event) appendAvro(b []byte) []byte {
	for _, s := range []string{e.ID, e.User, e.Campaign} {
		b = binary.AppendVarint(b, int64(len(s))) // zigzag, as Avro's long
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Score))
	return binary.AppendVarint(b, e.Time.UnixMilli())
}

func (e *Event) appendProtobuf(b []byte) []byte {
	for i, s := range []string{e.ID, e.User, e.Campaign} {
		b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.Score))
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(e.Time.UnixMilli()))
}

// Decode reads back an event of the encoder's format (for the demo's
// reward simulator and tests; Avro and Protobuf values must carry its
// header).
func (enc Encoder) Decode(v []byte) (Event, error) {
	if enc.format == "" {
		return decodeJSON(v)
	}
	if len(v) < len(enc.header) || string(v[:len(enc.header)]) != string(enc.header) {
		return Event{}, fmt.Errorf("%w: not framed for this encoder's schema", ErrFormat)
	}
	v = v[len(enc.header):]
	if enc.format == FormatAvro {
		return decodeAvro(v)
	}
	return decodeProtobuf(v)
}

func decodeAvro(v []byte) (Event, error) {
	var e Event
	bad := fmt.Errorf("%w: not an avro event", ErrFormat)
	for _, s := range []*string{&e.ID, &e.User, &e.Campaign} {
		n, k := binary.Varint(v)
		if k <= 0 || n < 0 || int64(len(v)-k) < n {
			return e, bad
		}
		*s, v = string(v[k:k+int(n)]), v[k+int(n):]
	}
	if len(v) < 8 {
		return e, bad
	}
	e.Score, v = math.Float64frombits(binary.LittleEndian.Uint64(v)), v[8:]
	ms, k := binary.Varint(v)
	if k <= 0 || k != len(v) {
		return e, bad
	}
	e.Time = time.UnixMilli(ms)
	return e, nil
}

func decodeProtobuf(v []byte) (Event, error) {
	var e Event
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return e, fmt.Errorf("%w: %v", ErrFormat, protowire.ParseError(n))
		}
		v = v[n:]
		switch {
		case num >= 1 && num <= 3 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(v)
			*[]*string{&e.ID, &e.User, &e.Campaign}[num-1] = string(s)
		case num == 4 && typ == protowire.Fixed64Type:
			var x uint64
			x, n = protowire.ConsumeFixed64(v)
			e.Score = math.Float64frombits(x)
		case num == 5 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(v)
			e.Time = time.UnixMilli(int64(x))
		default:
			n = protowire.ConsumeFieldValue(num, typ, v)
		}
		if n < 0 {
			return e, fmt.Errorf("%w: %v", ErrFormat, protowire.ParseError(n))
		}
		v = v[n:]
	}
	return e, nil
}

func decodeJSON(v []byte) (Event, error) {
	var j struct {
		ID, User, Campaign string
		Score              float64
		Ts                 int64
	}
	if err := json.Unmarshal(v, &j); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return Event{ID: j.ID, User: j.User, Campaign: j.Campaign, Score: j.Score, Time: time.UnixMilli(j.Ts)}, nil
}
