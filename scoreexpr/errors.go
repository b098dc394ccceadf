package scoreexpr

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidExpr is wrapped by every error about a score expression's
	// syntax (not about evaluating it).
	ErrInvalidExpr = errors.New("invalid score expression")
	// ErrEval is wrapped by every *EvalError.
	ErrEval = errors.New("score expression has no value")
)

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
