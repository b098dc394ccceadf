package suite

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/broker"
)

// The suite's event in every format: the same fields, so that one
// configuration (the same field paths) reads all three.
const (
	SuiteAvroSchema = `{"type":"record","name":"SuiteEvent","namespace":"throttler.suite","fields":[
 {"name":"id","type":"string"},
 {"name":"campaign","type":["null","string"],"default":null},
 {"name":"user","type":["null","string"],"default":null},
 {"name":"device","type":["null","string"],"default":null},
 {"name":"cost","type":"double"},
 {"name":"score","type":["null","double"],"default":null},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	SuiteProtoSchema = `syntax = "proto3";
package throttler.suite;
message SuiteEvent {
  string id = 1;
  optional string campaign = 2;
  optional string user = 3;
  optional string device = 4;
  double cost = 5;
  optional double score = 6;
  int64 ts = 7;
}
`
)

// StartRegistry starts a schema registry in the process; it stops with
// the test.
func StartRegistry(t *testing.T) *schemaregistry.Server {
	t.Helper()
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// StartBrokerAndRegistry starts an embedded broker (with opts) and a
// schema registry in the process; both stop with the test.
func StartBrokerAndRegistry(ctx context.Context, t *testing.T, opts ...broker.Opt) (*broker.Broker, *schemaregistry.Server) {
	t.Helper()
	b, err := broker.Start(ctx, append([]broker.Opt{broker.Addr("127.0.0.1:0"), broker.Logger(zerolog.Nop())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, StartRegistry(t)
}

// RunWorker runs a worker of cfg, logging to the test at level; stop
// stops it and returns what Run returned.
func RunWorker(ctx context.Context, t *testing.T, cfg *config.Config, level zerolog.Level) (w *consumer.Worker, tree *flow.Tree, stop func() error) {
	t.Helper()
	w, tree, err := app.NewWorker(cfg, consumer.WithLogger(zerolog.New(zerolog.NewTestWriter(t)).Level(level)))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return w, tree, func() error { cancel(); return <-done }
}

// SuiteEvent is one event; nil fields are null (JSON, Avro) or absent
// (Protobuf).
type SuiteEvent struct {
	Id                     string
	Campaign, User, Device *string
	Cost                   float64
	Score                  *float64
	Ts                     int64
}

func Str(s string) *string { return &s }

func Num(f float64) *float64 { return &f }

func (e SuiteEvent) With(f func(*SuiteEvent)) SuiteEvent { f(&e); return e }

// SuiteFormat encodes suite events in one format.
type SuiteFormat struct {
	Name   string
	Header []byte // the registry framing; nil for JSON
}

// NewSuiteFormats registers the Avro and Protobuf schemas with srv and
// returns the three formats, and the ids of the two schemas.
func NewSuiteFormats(t *testing.T, srv *schemaregistry.Server) (formats []SuiteFormat, avroID, protoID int) {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	reg := func(subject string, s sr.Schema) int {
		ss, err := cl.CreateSchema(context.Background(), subject, s)
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	avroID = reg("suite-avro-value", sr.Schema{Schema: SuiteAvroSchema, Type: sr.TypeAvro})
	protoID = reg("suite-proto-value", sr.Schema{Schema: SuiteProtoSchema, Type: sr.TypeProtobuf})
	return []SuiteFormat{{Name: "json"}, {Name: "avro", Header: FrameHeader(avroID, false)},
		{Name: "protobuf", Header: FrameHeader(protoID, true)}}, avroID, protoID
}

// FrameHeader returns the wire format's header of schema id (with the
// Protobuf message index [0]).
func FrameHeader(id int, proto bool) []byte {
	h := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[1:], uint32(id))
	if proto {
		h = append(h, 0)
	}
	return h
}

// Encode returns e in the format.
func (f SuiteFormat) Encode(e SuiteEvent) []byte {
	switch f.Name {
	case "avro":
		return AppendAvroEvent(append([]byte(nil), f.Header...), e)
	case "protobuf":
		return AppendProtoEvent(append([]byte(nil), f.Header...), e)
	}
	return JsonEvent(e)
}

func JsonEvent(e SuiteEvent) []byte {
	b := []byte(`{"id":` + strconv.Quote(e.Id))
	for _, f := range []struct {
		name string
		v    *string
	}{{"campaign", e.Campaign}, {"user", e.User}, {"device", e.Device}} {
		b = append(b, `,"`+f.name+`":`...)
		if f.v == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, JsonString(*f.v)...)
		}
	}
	b = append(b, `,"cost":`...)
	b = strconv.AppendFloat(b, e.Cost, 'g', -1, 64)
	b = append(b, `,"score":`...)
	if e.Score == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, *e.Score, 'g', -1, 64)
	}
	b = append(b, `,"ts":`...)
	return append(strconv.AppendInt(b, e.Ts, 10), '}')
}

// JsonString quotes s for JSON, keeping invalid UTF-8 bytes as they are
// (for the invalid UTF-8 case).
func JsonString(s string) string { return `"` + s + `"` }

func AppendAvroEvent(b []byte, e SuiteEvent) []byte {
	avroString := func(b []byte, s string) []byte { return append(binary.AppendVarint(b, int64(len(s))), s...) }
	b = avroString(b, e.Id)
	for _, v := range []*string{e.Campaign, e.User, e.Device} {
		if v == nil {
			b = binary.AppendVarint(b, 0) // branch null
		} else {
			b = avroString(binary.AppendVarint(b, 1), *v)
		}
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Cost))
	if e.Score == nil {
		b = binary.AppendVarint(b, 0)
	} else {
		b = binary.LittleEndian.AppendUint64(binary.AppendVarint(b, 1), math.Float64bits(*e.Score))
	}
	return binary.AppendVarint(b, e.Ts)
}

func AppendProtoEvent(b []byte, e SuiteEvent) []byte {
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), e.Id)
	for i, v := range []*string{e.Campaign, e.User, e.Device} {
		if v != nil {
			b = protowire.AppendString(protowire.AppendTag(b, protowire.Number(i+2), protowire.BytesType), *v)
		}
	}
	if e.Cost != 0 {
		b = protowire.AppendFixed64(protowire.AppendTag(b, 5, protowire.Fixed64Type), math.Float64bits(e.Cost))
	}
	if e.Score != nil {
		b = protowire.AppendFixed64(protowire.AppendTag(b, 6, protowire.Fixed64Type), math.Float64bits(*e.Score))
	}
	if e.Ts != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 7, protowire.VarintType), uint64(e.Ts))
	}
	return b
}
