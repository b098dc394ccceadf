package consumer

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrBadRecord is wrapped by every *RecordError: the record cannot be
	// processed and goes to the dead-letter topic.
	ErrBadRecord = errors.New("bad record")
	// ErrInvalidConfig is wrapped by every error about an option value.
	ErrInvalidConfig = errors.New("invalid consumer configuration")
	// ErrInvalidExpr is wrapped by every error about a score expression's
	// syntax (not about evaluating it).
	ErrInvalidExpr = errors.New("invalid score expression")
	// ErrClosed is returned by Worker.Run when it is called twice.
	ErrClosed = errors.New("worker already ran")
)

// Reason is the machine-readable cause of a dead-lettered record. Every
// distinct problem has its own Reason; it is the value of the
// throttler-reason header and the reason label of the dead-letter metric.
type Reason string

// Reasons produced by the built-in stages.
const (
	ReasonEmptyValue     Reason = "empty_value"        // value is empty or null (tombstone)
	ReasonTooLarge       Reason = "too_large"          // value is larger than the maximum record size
	ReasonInvalidUTF8    Reason = "invalid_utf8"       // value is not valid UTF-8
	ReasonNotJSON        Reason = "not_json"           // value is not JSON
	ReasonTruncated      Reason = "truncated"          // value is the beginning of a JSON text that ends too early
	ReasonNotObject      Reason = "not_object"         // JSON text is not an object
	ReasonTooDeep        Reason = "too_deep"           // JSON nesting is deeper than the maximum depth
	ReasonMissingBudget  Reason = "missing_budget"     // budget field absent or null
	ReasonBudgetType     Reason = "budget_not_string"  // budget field is not a string
	ReasonUnknownBudget  Reason = "unknown_budget"     // budget names no configured budget
	ReasonMissingKey     Reason = "missing_key"        // key required but absent, empty or null
	ReasonKeyType        Reason = "key_wrong_type"     // key field is an object, array or bool
	ReasonMissingID      Reason = "missing_id"         // id field configured but absent or null
	ReasonIDType         Reason = "id_wrong_type"      // id field is an object, array or bool
	ReasonMissingScore   Reason = "missing_score"      // score field configured but absent or null
	ReasonScoreType      Reason = "score_not_number"   // score field is not a number
	ReasonScoreNotFinite Reason = "score_not_finite"   // score (or expression result) is NaN or infinite
	ReasonScoreNegative  Reason = "score_negative"     // score (or expression result) is below zero
	ReasonExprField      Reason = "expr_missing_field" // expression names a field the record lacks
	ReasonExprFieldType  Reason = "expr_field_not_number"
	ReasonMissingTime    Reason = "missing_time" // time field configured but absent or null
	ReasonTimeType       Reason = "time_wrong_type"
	ReasonBadTime        Reason = "bad_time"         // time string is not RFC 3339, or out of range
	ReasonRewardValue    Reason = "reward_bad_value" // reward value not a finite non-negative number
	ReasonStagePanic     Reason = "stage_panic"      // a stage panicked; the panic was recovered
	ReasonNoDestination  Reason = "no_destination"   // passed but no output topic is known
	ReasonUnexplained    Reason = "unexplained"      // a user stage dead-lettered without saying why
)

// Stage names used in RecordError.Stage and the throttler-stage header.
const (
	StageDecode = "decode"
	StageScore  = "score"
	StageCaps   = "caps"
	StageDecide = "decide"
	StageSplit  = "split"
	StageRoute  = "route"
	StageReward = "reward"
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
	return fmt.Sprintf("consumer option %s: %s", e.Option, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ExprError points at the position in a score expression where parsing
// failed. It wraps ErrInvalidExpr.
type ExprError struct {
	Expr   string
	Pos    int // byte offset
	Reason string
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("score expression %q at offset %d: %s", e.Expr, e.Pos, e.Reason)
}

// Unwrap returns ErrInvalidExpr.
func (e *ExprError) Unwrap() error { return ErrInvalidExpr }
