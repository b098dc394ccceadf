package decode

import (
	"errors"
	"fmt"

	"github.com/throttler/throttler/internal/configerr"
	"github.com/throttler/throttler/scoreexpr"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrBadRecord is wrapped by every *RecordError: the record cannot be
	// processed and goes to the dead-letter topic.
	ErrBadRecord = errors.New("bad record")
	// ErrInvalidConfig is wrapped by every error about an option value
	// (of the decoder, the pipeline and the worker). It is the one
	// sentinel of configuration errors: stats.ErrInvalidConfig,
	// splitter.ErrInvalidConfig and config.ErrInvalid are the same value.
	ErrInvalidConfig = configerr.ErrInvalid
)

// Reason is the machine-readable cause of a dead-lettered record. Every
// distinct problem has its own Reason; it is the value of the
// throttler-reason header and the reason label of the dead-letter metric.
type Reason string

// Reasons produced by the built-in stages.
const (
	ReasonEmptyValue     Reason = "empty_value"                  // value is empty or null (tombstone)
	ReasonTooLarge       Reason = "too_large"                    // value is larger than the maximum record size
	ReasonInvalidUTF8    Reason = "invalid_utf8"                 // value is not valid UTF-8
	ReasonNotJSON        Reason = "not_json"                     // value is not JSON
	ReasonTruncated      Reason = "truncated"                    // value is the beginning of a JSON text that ends too early
	ReasonNotObject      Reason = "not_object"                   // JSON text is not an object
	ReasonTooDeep        Reason = "too_deep"                     // JSON nesting is deeper than the maximum depth
	ReasonMissingBudget  Reason = "missing_budget"               // budget field absent or null
	ReasonBudgetType     Reason = "budget_not_string"            // budget field is not a string
	ReasonUnknownBudget  Reason = "unknown_budget"               // budget names no configured budget
	ReasonMissingKey     Reason = "missing_key"                  // key required but absent, empty or null
	ReasonKeyType        Reason = "key_wrong_type"               // key field is an object, array or bool
	ReasonMissingID      Reason = "missing_id"                   // id field configured but absent or null
	ReasonIDType         Reason = "id_wrong_type"                // id field is an object, array or bool
	ReasonMissingScore   Reason = "missing_score"                // score field configured but absent or null
	ReasonScoreType      Reason = "score_not_number"             // score field is not a number
	ReasonScoreNotFinite Reason = Reason(scoreexpr.NotFinite)    // score (or expression result) is NaN or infinite
	ReasonScoreNegative  Reason = "score_negative"               // score (or expression result) is below zero
	ReasonExprField      Reason = Reason(scoreexpr.MissingField) // expression names a field the record lacks
	ReasonExprFieldType  Reason = Reason(scoreexpr.FieldNotNumber)
	ReasonMissingTime    Reason = "missing_time" // time field configured but absent or null
	ReasonTimeType       Reason = "time_wrong_type"
	ReasonBadTime        Reason = "bad_time"            // time string is not RFC 3339, or out of range
	ReasonRewardValue    Reason = "reward_bad_value"    // reward value not a finite non-negative number
	ReasonRewardRange    Reason = "reward_out_of_range" // reward value above the configured maximum
	ReasonStagePanic     Reason = "stage_panic"         // a stage panicked; the panic was recovered
	ReasonNoDestination  Reason = "no_destination"      // passed but no output topic is known
	ReasonUnexplained    Reason = "unexplained"         // a user stage dead-lettered without saying why
)

// Stage names of the decoder's RecordErrors (RecordError.Stage and the
// throttler-stage header); package pipeline names the others.
const (
	StageDecode = "decode"
	StageScore  = "score"
)

// RecordError says why one record could not be processed: the stage that
// gave up, a Reason from the fixed list above and a human-readable detail.
// It wraps ErrBadRecord (and Err, when set).
type RecordError struct {
	Stage  string
	Reason Reason
	Field  string // JSON path of the offending field, if any
	Detail string
	Err    error // underlying error, may be nil
}

func (e *RecordError) Error() string {
	msg := e.Stage + ": " + string(e.Reason)
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrBadRecord and the underlying error, if any.
func (e *RecordError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadRecord, e.Err}
	}
	return []error{ErrBadRecord}
}

func recErr(stage string, reason Reason, field, detail string) *RecordError {
	return &RecordError{Stage: stage, Reason: reason, Field: field, Detail: detail}
}

// ConfigError names the option whose value is wrong. It wraps
// ErrInvalidConfig.
type ConfigError struct {
	Option string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("option %s: %s", e.Option, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }
