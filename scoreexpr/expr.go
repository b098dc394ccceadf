// Package scoreexpr is the score expression language of throttler: field
// paths of a JSON event as identifiers, numbers, + - * /, and a few
// functions, compiled once to a small stack machine that evaluates without
// allocating. The decoder (package decode) scores events with it.
package scoreexpr

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Limits of the score expression language.
const (
	maxExprLen    = 4096 // bytes of source text
	maxExprDepth  = 64   // nesting of parentheses, calls and unary minus
	maxExprStack  = 64   // evaluation stack slots
	maxExprFields = 16   // distinct field paths
)

// Expr is a compiled score expression.
//
// The language has numbers (1, 2.5, 1e-3), field paths used as identifiers
// (clicks, user.age, items.0.price; a path with other characters is written
// between backquotes: `a-b.c`), the operators + - * / with the usual
// precedence, unary minus, parentheses and the functions
//
//	log(x) exp(x) sqrt(x) abs(x) pow(x, y) clamp(x, lo, hi)
//	min(x, y, ...) max(x, y, ...)
//
// A field must hold a JSON number. Evaluation allocates nothing and an Expr
// is safe for concurrent use: it is immutable once parsed. A result that is
// NaN or infinite is an error; intermediate infinities are allowed
// (min(1/0, 3) is 3).
type Expr struct {
	src    string
	root   *exprNode
	prog   []instr
	fields []string
}

// ParseExpr parses and compiles a score expression. Errors are *ExprError.
func ParseExpr(src string) (*Expr, error) {
	if len(src) > maxExprLen {
		return nil, &ExprError{Expr: src[:64] + "...", Pos: maxExprLen, Reason: "expression too long"}
	}
	if !utf8.ValidString(src) {
		return nil, &ExprError{Expr: src, Reason: "not valid UTF-8"}
	}
	p := &exprParser{src: src}
	p.next()
	root, err := p.parse(0, 0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errf("unexpected %s", p.tok.describe())
	}
	e := &Expr{src: src, root: root}
	if err := e.compile(); err != nil {
		return nil, err
	}
	return e, nil
}

// MustParseExpr is like ParseExpr but panics on error; for tests and
// package-level variables.
func MustParseExpr(src string) *Expr {
	e, err := ParseExpr(src)
	if err != nil {
		panic(err)
	}
	return e
}

// Source returns the text the expression was parsed from.
func (e *Expr) Source() string { return e.src }

// String returns the expression in canonical form: parentheses only
// where the tree needs them (a right operand of equal precedence keeps
// them, so the evaluation order is kept), unary plus and redundant
// parentheses dropped, numbers in shortest round-trip form. Parsing the
// canonical form gives an expression that evaluates identically, and it
// nests no deeper than the source (a fully parenthesized form would nest
// twice as deep, past maxExprDepth, for sources near the limit).
func (e *Expr) String() string {
	var b strings.Builder
	e.root.format(&b)
	return b.String()
}

// Fields returns the distinct field paths the expression reads, in order of
// first appearance. The slice must not be modified.
func (e *Expr) Fields() []string { return e.fields }

// Failure is why an evaluation found no score. Its values are the
// reasons the decoder gives a dead letter (decode.ReasonExprField, …).
type Failure string

// Failures of Eval.
const (
	MissingField   Failure = "expr_missing_field"    // a field is absent or null
	FieldNotNumber Failure = "expr_field_not_number" // a field holds no JSON number
	NotFinite      Failure = "score_not_finite"      // the result is NaN or infinite
)

// EvalError says why an evaluation failed and, for a field, which. It
// wraps ErrEval.
type EvalError struct {
	Failure Failure
	Field   string // the field's path; "" for NotFinite
}

func (e *EvalError) Error() string {
	if e.Field == "" {
		return "score expression: " + string(e.Failure)
	}
	return "score expression: " + string(e.Failure) + " (field " + e.Field + ")"
}

// Unwrap returns ErrEval.
func (e *EvalError) Unwrap() error { return ErrEval }

// Eval evaluates the expression over one JSON document, reading every
// field with gjson. It returns the result, or an *EvalError for a missing
// or non-numeric field or a NaN/infinite result. It allocates nothing when
// it succeeds.
func (e *Expr) Eval(json string) (float64, error) {
	var vars [maxExprFields]float64
	for i, f := range e.fields {
		r := gjson.Get(json, f)
		if fail := FieldValue(r.Type, r.Num, &vars[i]); fail != "" {
			return 0, &EvalError{Failure: fail, Field: f}
		}
	}
	v := e.run(&vars)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &EvalError{Failure: NotFinite}
	}
	return v, nil
}

// FieldValue stores in *dst the number a field of type typ and value num
// (as gjson reads them) gives the expression, or returns why it gives none.
func FieldValue(typ gjson.Type, num float64, dst *float64) Failure {
	switch typ {
	case gjson.Number:
		*dst = num
		return ""
	case gjson.Null:
		return MissingField
	}
	return FieldNotNumber
}

// MaxFields is the most distinct fields an expression may read.
const MaxFields = maxExprFields

// Run evaluates the expression with the fields' values (in Fields order)
// and reports NaN or infinite results as NotFinite; the decoder's hot
// path, which reads the fields itself.
func (e *Expr) Run(vars *[MaxFields]float64) (float64, Failure) {
	v := e.run(vars)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, NotFinite
	}
	return v, ""
}

// EvalVars evaluates the expression with the fields given as values, in the
// order of Fields. It returns NaN or ±Inf as they come (no error): it is
// meant for tests and tools.
func (e *Expr) EvalVars(values ...float64) float64 {
	var vars [maxExprFields]float64
	copy(vars[:], values)
	return e.run(&vars)
}
