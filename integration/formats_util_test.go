package integration

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
	suiteAvroSchema = `{"type":"record","name":"SuiteEvent","namespace":"throttler.suite","fields":[
 {"name":"id","type":"string"},
 {"name":"campaign","type":["null","string"],"default":null},
 {"name":"user","type":["null","string"],"default":null},
 {"name":"device","type":["null","string"],"default":null},
 {"name":"cost","type":"double"},
 {"name":"score","type":["null","double"],"default":null},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	suiteProtoSchema = `syntax = "proto3";
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

// startRegistry starts a schema registry in the process; it stops with
// the test.
func startRegistry(t *testing.T) *schemaregistry.Server {
	t.Helper()
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// startBrokerAndRegistry starts an embedded broker (with opts) and a
// schema registry in the process; both stop with the test.
func startBrokerAndRegistry(ctx context.Context, t *testing.T, opts ...broker.Opt) (*broker.Broker, *schemaregistry.Server) {
	t.Helper()
	b, err := broker.Start(ctx, append([]broker.Opt{broker.Addr("127.0.0.1:0"), broker.Logger(zerolog.Nop())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, startRegistry(t)
}

// runWorker runs a worker of cfg, logging to the test at level; stop
// stops it and returns what Run returned.
func runWorker(ctx context.Context, t *testing.T, cfg *config.Config, level zerolog.Level) (w *consumer.Worker, tree *flow.Tree, stop func() error) {
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

// suiteEvent is one event; nil fields are null (JSON, Avro) or absent
// (Protobuf).
type suiteEvent struct {
	id                     string
	campaign, user, device *string
	cost                   float64
	score                  *float64
	ts                     int64
}

func str(s string) *string                               { return &s }
func num(f float64) *float64                             { return &f }
func (e suiteEvent) with(f func(*suiteEvent)) suiteEvent { f(&e); return e }

// suiteFormat encodes suite events in one format.
type suiteFormat struct {
	name   string
	header []byte // the registry framing; nil for JSON
}

// newSuiteFormats registers the Avro and Protobuf schemas with srv and
// returns the three formats, and the ids of the two schemas.
func newSuiteFormats(t *testing.T, srv *schemaregistry.Server) (formats []suiteFormat, avroID, protoID int) {
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
	avroID = reg("suite-avro-value", sr.Schema{Schema: suiteAvroSchema, Type: sr.TypeAvro})
	protoID = reg("suite-proto-value", sr.Schema{Schema: suiteProtoSchema, Type: sr.TypeProtobuf})
	return []suiteFormat{{name: "json"}, {name: "avro", header: frameHeader(avroID, false)},
		{name: "protobuf", header: frameHeader(protoID, true)}}, avroID, protoID
}

// frameHeader returns the wire format's header of schema id (with the
// Protobuf message index [0]).
func frameHeader(id int, proto bool) []byte {
	h := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[1:], uint32(id))
	if proto {
		h = append(h, 0)
	}
	return h
}

// encode returns e in the format.
func (f suiteFormat) encode(e suiteEvent) []byte {
	switch f.name {
	case "avro":
		return appendAvroEvent(append([]byte(nil), f.header...), e)
	case "protobuf":
		return appendProtoEvent(append([]byte(nil), f.header...), e)
	}
	return jsonEvent(e)
}

func jsonEvent(e suiteEvent) []byte {
	b := []byte(`{"id":` + strconv.Quote(e.id))
	for _, f := range []struct {
		name string
		v    *string
	}{{"campaign", e.campaign}, {"user", e.user}, {"device", e.device}} {
		b = append(b, `,"`+f.name+`":`...)
		if f.v == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, jsonString(*f.v)...)
		}
	}
	b = append(b, `,"cost":`...)
	b = strconv.AppendFloat(b, e.cost, 'g', -1, 64)
	b = append(b, `,"score":`...)
	if e.score == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, *e.score, 'g', -1, 64)
	}
	b = append(b, `,"ts":`...)
	return append(strconv.AppendInt(b, e.ts, 10), '}')
}

// jsonString quotes s for JSON, keeping invalid UTF-8 bytes as they are
// (for the invalid UTF-8 case).
func jsonString(s string) string { return `"` + s + `"` }

func appendAvroEvent(b []byte, e suiteEvent) []byte {
	avroString := func(b []byte, s string) []byte { return append(binary.AppendVarint(b, int64(len(s))), s...) }
	b = avroString(b, e.id)
	for _, v := range []*string{e.campaign, e.user, e.device} {
		if v == nil {
			b = binary.AppendVarint(b, 0) // branch null
		} else {
			b = avroString(binary.AppendVarint(b, 1), *v)
		}
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.cost))
	if e.score == nil {
		b = binary.AppendVarint(b, 0)
	} else {
		b = binary.LittleEndian.AppendUint64(binary.AppendVarint(b, 1), math.Float64bits(*e.score))
	}
	return binary.AppendVarint(b, e.ts)
}

func appendProtoEvent(b []byte, e suiteEvent) []byte {
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), e.id)
	for i, v := range []*string{e.campaign, e.user, e.device} {
		if v != nil {
			b = protowire.AppendString(protowire.AppendTag(b, protowire.Number(i+2), protowire.BytesType), *v)
		}
	}
	if e.cost != 0 {
		b = protowire.AppendFixed64(protowire.AppendTag(b, 5, protowire.Fixed64Type), math.Float64bits(e.cost))
	}
	if e.score != nil {
		b = protowire.AppendFixed64(protowire.AppendTag(b, 6, protowire.Fixed64Type), math.Float64bits(*e.score))
	}
	if e.ts != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 7, protowire.VarintType), uint64(e.ts))
	}
	return b
}
