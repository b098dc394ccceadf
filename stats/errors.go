package stats

import (
	"errors"
	"fmt"

	"github.com/throttler/throttler/internal/configerr"
)

// Sentinel errors, for errors.Is. Every error this package returns wraps one
// of them or a context error.
var (
	// ErrUnknownVersion is wrapped by a DecodeError for a key or value whose
	// version byte this build does not know: written by a newer release, or
	// not written by this package at all.
	ErrUnknownVersion = errors.New("unknown encoding version")

	// ErrCorrupt is wrapped by a DecodeError for bytes that are truncated,
	// overlong or otherwise malformed.
	ErrCorrupt = errors.New("corrupt encoding")

	// ErrInvalidReport is returned when a record cannot be encoded: an
	// empty or overlong name, a budget or experiment listed twice in one
	// ledger record, a source name that is not "topic/partition".
	ErrInvalidReport = errors.New("invalid report")

	// ErrInvalidConfig is wrapped by the errors of constructors given an
	// unusable argument or option: an empty topic name, a nil
	// collaborator, a kgo client configured for a consumer group. It is
	// the one sentinel of configuration errors (decode.ErrInvalidConfig
	// is the same value).
	ErrInvalidConfig = configerr.ErrInvalid

	// ErrTopicNotFound is wrapped by a TopicError when a topic (or the
	// partition asked for) does not exist.
	ErrTopicNotFound = errors.New("topic not found")

	// ErrTopicMismatch is wrapped by a TopicError when a topic exists but
	// does not match its TopicSpec: too few partitions, or a topic that must
	// be compacted is not.
	ErrTopicMismatch = errors.New("topic does not match its spec")

	// ErrClosed is returned by View.WaitCaughtUp once the view is closed.
	ErrClosed = errors.New("stats view closed")
)

// DecodeError says what could not be decoded and where.
type DecodeError struct {
	What string // "key", "value", "budget definition", "ledger", …
	Pos  int    // byte position in the input where decoding failed
	Err  error  // ErrUnknownVersion or ErrCorrupt
	Msg  string // detail
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("stats: decode %s: byte %d: %v: %s", e.What, e.Pos, e.Err, e.Msg)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ReportError names the report that could not be encoded.
type ReportError struct {
	Budget string
	Source string
	Msg    string
}

func (e *ReportError) Error() string {
	return fmt.Sprintf("stats: report budget=%q source=%q: %v: %s", e.Budget, e.Source, ErrInvalidReport, e.Msg)
}

func (e *ReportError) Unwrap() error { return ErrInvalidReport }

// TopicError carries the topic, the operation and the cause of a failure
// about a topic: creating it, checking it, reading it.
type TopicError struct {
	Topic string
	Op    string // e.g. "create", "verify", "list offsets", "load ledgers"
	Err   error
}

func (e *TopicError) Error() string {
	return fmt.Sprintf("stats: topic %q: %s: %v", e.Topic, e.Op, e.Err)
}

func (e *TopicError) Unwrap() error { return e.Err }

// RecordError is a record of a topic that could not be applied: it carries
// the record's coordinates and the DecodeError.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("stats: record %s/%d@%d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

func errInvalidConfig(format string, args ...any) error {
	return fmt.Errorf("stats: %w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}
