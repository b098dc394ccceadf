package decode

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Format is how the record values of a topic are encoded.
type Format uint8

// Formats.
const (
	// FormatJSON: one JSON object per record value. The default.
	FormatJSON Format = iota
	// FormatAvro: Avro binary in the schema registry wire format (a zero
	// magic byte, the schema id as 4 big-endian bytes, the datum).
	FormatAvro
	// FormatProtobuf: Protobuf in the schema registry wire format (magic
	// byte, schema id, the message indexes as zigzag varints, the
	// message).
	FormatProtobuf
)

var formatNames = [...]string{FormatJSON: "json", FormatAvro: "avro", FormatProtobuf: "protobuf"}

// Formats lists the names ParseFormat accepts.
var Formats = formatNames[:]

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Framed reports whether records of f carry a schema id (the registry
// wire format): Avro and Protobuf.
func (f Format) Framed() bool { return f == FormatAvro || f == FormatProtobuf }

// ParseFormat returns the format named s ("json", "avro", "protobuf"; ""
// is json).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return FormatJSON, nil
	}
	for f, n := range formatNames {
		if n == s {
			return Format(f), nil
		}
	}
	return 0, &ConfigError{Option: "format", Reason: fmt.Sprintf("want json, avro or protobuf, got %q", s)}
}

// Schema is a schema as the registry holds it.
type Schema struct {
	// Format is FormatAvro or FormatProtobuf.
	Format Format
	// Text is the Avro schema (JSON) or the .proto file.
	Text string
	// References are the schemas Text refers to, with the ones they refer
	// to, dependencies first: Avro named types defined in other subjects,
	// Protobuf imports. Name is the name Text uses for it (the import
	// path of a .proto file).
	References []Reference
}

// Reference is a schema another one refers to.
type Reference struct {
	Name string
	Text string
}

// Schemas finds the schema a framed record names by its id: a schema
// registry client (internal/schemaregistry), or a fixed set in tests.
type Schemas interface {
	// Schema returns the schema registered under id. A decoder asks once
	// per id and keeps what it compiles from the answer; it asks from a
	// partition's goroutine, which waits: Schema must answer soon. An
	// error wrapping ErrUnknownSchema says that the registry has no such
	// schema (the record is a bad record, ReasonUnknownSchema); any other
	// error says that it cannot answer now: the record is not decoded
	// (*WaitError) and must be read again later. An error with a method
	// RetryAfter() time.Duration says how much later.
	Schema(id int) (Schema, error)
}

// Errors of schemas.
var (
	// ErrUnknownSchema: the registry has no schema with the id.
	ErrUnknownSchema = errors.New("no schema with this id")
	// ErrSchemaUnavailable is wrapped by every *WaitError.
	ErrSchemaUnavailable = errors.New("schema not available now")
)

// DefaultRetryAfter is how long a record waits for its schema when the
// Schemas' error does not say.
const DefaultRetryAfter = time.Second

// WaitError says that a record could not be decoded now because its schema
// could not be had: it is not a bad record; read it again after
// RetryAfter. It wraps ErrSchemaUnavailable and Err.
type WaitError struct {
	ID         int
	RetryAfter time.Duration
	Err        error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("schema %d not available now (retry in %v): %v", e.ID, e.RetryAfter, e.Err)
}

// Unwrap returns ErrSchemaUnavailable and the underlying error.
func (e *WaitError) Unwrap() []error { return []error{ErrSchemaUnavailable, e.Err} }

func waitError(id int, err error) *WaitError {
	after := DefaultRetryAfter
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		after = ra.RetryAfter()
	}
	return &WaitError{ID: id, RetryAfter: after, Err: err}
}

// Reasons of framed records (see docs/formats.md).
const (
	// ReasonNotFramed: the value of a framed topic does not start with
	// the magic byte 0 and a schema id (or, for Protobuf, is followed by
	// no valid message index).
	ReasonNotFramed Reason = "not_framed"
	// ReasonUnknownSchema: the registry has no schema with the record's
	// id.
	ReasonUnknownSchema Reason = "unknown_schema"
	// ReasonBadSchema: the record's schema cannot be used: it is of
	// another format than the topic's, it does not parse, or the message
	// index names no message.
	ReasonBadSchema Reason = "bad_schema"
	// ReasonSchemaMismatch: the payload does not match its schema
	// (truncated, a length or an index out of range, bytes left over).
	ReasonSchemaMismatch Reason = "schema_mismatch"
)

// framedCfg is the part of the decoder's options about formats.
type framedCfg struct {
	def     Format
	topics  map[string]Format
	schemas Schemas
	extra   []string
}

// WithFormat sets the format of the records of every topic that
// TopicFormat does not name. Default FormatJSON.
func WithFormat(f Format) Opt { return optFunc(func(c *decodeCfg) { c.framed.def = f }) }

// TopicFormat sets the format of one topic's records (see NewScan).
// Default: WithFormat's.
func TopicFormat(topic string, f Format) Opt {
	return optFunc(func(c *decodeCfg) {
		if c.framed.topics == nil {
			c.framed.topics = map[string]Format{}
		}
		c.framed.topics[topic] = f
	})
}

// WithSchemas sets where the schemas of framed records come from.
// Required when a format is framed. Default none.
func WithSchemas(s Schemas) Opt {
	return optFunc(func(c *decodeCfg) { c.framed.schemas = s })
}

// Paths adds paths the decoder extracts beside its fields, for stages that
// read them with Decoded.Field: the caps' key and quantity paths, the
// reward value. A framed record has no other path to read. Default none.
func Paths(paths ...string) Opt {
	return optFunc(func(c *decodeCfg) { c.framed.extra = append(c.framed.extra, paths...) })
}
