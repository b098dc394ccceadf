package consumer

import (
	"math"
	"strconv"
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

// exprEvalError describes why an evaluation failed; it is turned into a
// *RecordError by the score stage, so Eval itself allocates nothing.
type exprEvalError struct {
	reason Reason
	field  string
}

// Eval evaluates the expression over one JSON document, reading every field
// with gjson. It returns the result, or a *RecordError with stage "score"
// for a missing or non-numeric field or a NaN/infinite result.
func (e *Expr) Eval(json string) (float64, error) {
	v, ee := e.eval(json)
	if ee.reason != "" {
		return 0, recErr(StageScore, ee.reason, ee.field, "")
	}
	return v, nil
}

func (e *Expr) eval(json string) (float64, exprEvalError) {
	var res [maxExprFields]jval
	for i, f := range e.fields {
		res[i] = fromGJSON(gjson.Get(json, f))
	}
	return e.evalResults(res[:len(e.fields)])
}

// evalResults evaluates the expression with the fields' values looked up
// already (by Fields order).
func (e *Expr) evalResults(res []jval) (float64, exprEvalError) {
	var vars [maxExprFields]float64
	for i, f := range e.fields {
		r := res[i]
		switch r.Type {
		case gjson.Number:
			vars[i] = r.Num
		case gjson.Null:
			return 0, exprEvalError{ReasonExprField, f}
		default:
			if !r.exists() {
				return 0, exprEvalError{ReasonExprField, f}
			}
			return 0, exprEvalError{ReasonExprFieldType, f}
		}
	}
	v := e.run(&vars)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, exprEvalError{ReasonScoreNotFinite, ""}
	}
	return v, exprEvalError{}
}

// EvalVars evaluates the expression with the fields given as values, in the
// order of Fields. It returns NaN or ±Inf as they come (no error): it is
// meant for tests and tools.
func (e *Expr) EvalVars(values ...float64) float64 {
	var vars [maxExprFields]float64
	copy(vars[:], values)
	return e.run(&vars)
}

// ---- tokens ----

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokPath // backquoted
	tokOp   // + - * /
	tokLParen
	tokRParen
	tokComma
	tokBad
)

type token struct {
	kind tokKind
	pos  int
	text string
	num  float64
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokBad:
		return "character " + strconv.Quote(t.text)
	default:
		return strconv.Quote(t.text)
	}
}

type exprParser struct {
	src string
	off int
	tok token
	err *ExprError
}

func (p *exprParser) errf(format string, args ...any) *ExprError {
	reason := format
	if len(args) > 0 {
		reason = sprintf(format, args...)
	}
	return &ExprError{Expr: p.src, Pos: p.tok.pos, Reason: reason}
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || ('0' <= c && c <= '9') || c == '.'
}

func (p *exprParser) next() {
	s := p.src
	i := p.off
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	start := i
	if i >= len(s) {
		p.tok = token{kind: tokEOF, pos: i}
		p.off = i
		return
	}
	c := s[i]
	switch {
	case c == '(':
		p.tok, p.off = token{kind: tokLParen, pos: i, text: "("}, i+1
	case c == ')':
		p.tok, p.off = token{kind: tokRParen, pos: i, text: ")"}, i+1
	case c == ',':
		p.tok, p.off = token{kind: tokComma, pos: i, text: ","}, i+1
	case c == '+' || c == '-' || c == '*' || c == '/':
		p.tok, p.off = token{kind: tokOp, pos: i, text: s[i : i+1]}, i+1
	case c == '`':
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			p.tok, p.off = token{kind: tokBad, pos: i, text: "`"}, len(s)
			return
		}
		p.tok, p.off = token{kind: tokPath, pos: i, text: s[i+1 : i+1+j]}, i+2+j
	case isIdentStart(c):
		for i < len(s) && isIdentChar(s[i]) {
			i++
		}
		p.tok, p.off = token{kind: tokIdent, pos: start, text: s[start:i]}, i
	case ('0' <= c && c <= '9') || c == '.':
		for i < len(s) && (('0' <= s[i] && s[i] <= '9') || s[i] == '.') {
			i++
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && '0' <= s[j] && s[j] <= '9' {
				for j < len(s) && '0' <= s[j] && s[j] <= '9' {
					j++
				}
				i = j
			}
		}
		text := s[start:i]
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.tok, p.off = token{kind: tokBad, pos: start, text: text}, i
			return
		}
		p.tok, p.off = token{kind: tokNum, pos: start, text: text, num: v}, i
	default:
		r, size := utf8.DecodeRuneInString(s[i:])
		p.tok, p.off = token{kind: tokBad, pos: i, text: string(r)}, i+size
	}
}

// ---- AST ----

type exprOp uint8

const (
	opConst exprOp = iota
	opField
	opNeg
	opAdd
	opSub
	opMul
	opDiv
	opLog
	opExp
	opSqrt
	opAbs
	opMin
	opMax
	opPow
	opClamp
)

type funcSpec struct {
	op      exprOp
	minArgs int
	maxArgs int // -1: variadic
}

var exprFuncs = map[string]funcSpec{
	"log":   {opLog, 1, 1},
	"exp":   {opExp, 1, 1},
	"sqrt":  {opSqrt, 1, 1},
	"abs":   {opAbs, 1, 1},
	"min":   {opMin, 2, -1},
	"max":   {opMax, 2, -1},
	"pow":   {opPow, 2, 2},
	"clamp": {opClamp, 3, 3},
}

var opNames = [...]string{opLog: "log", opExp: "exp", opSqrt: "sqrt", opAbs: "abs", opMin: "min", opMax: "max", opPow: "pow", opClamp: "clamp"}

type exprNode struct {
	op   exprOp
	num  float64
	path string
	args []*exprNode
}

// binding powers: left, right
func infixBP(op string) (int, int) {
	switch op {
	case "+", "-":
		return 1, 2
	case "*", "/":
		return 3, 4
	}
	return -1, -1
}

const prefixBP = 5

func (p *exprParser) parse(minBP, depth int) (*exprNode, error) {
	if depth > maxExprDepth {
		return nil, p.errf("expression nested too deeply")
	}
	lhs, err := p.parsePrefix(depth)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokOp {
		l, r := infixBP(p.tok.text)
		if l < minBP {
			break
		}
		opText := p.tok.text
		p.next()
		rhs, err := p.parse(r, depth+1)
		if err != nil {
			return nil, err
		}
		var op exprOp
		switch opText {
		case "+":
			op = opAdd
		case "-":
			op = opSub
		case "*":
			op = opMul
		default:
			op = opDiv
		}
		lhs = &exprNode{op: op, args: []*exprNode{lhs, rhs}}
	}
	return lhs, nil
}

func (p *exprParser) parsePrefix(depth int) (*exprNode, error) {
	t := p.tok
	switch t.kind {
	case tokNum:
		p.next()
		return &exprNode{op: opConst, num: t.num}, nil
	case tokPath:
		if t.text == "" {
			return nil, p.errf("empty field path")
		}
		p.next()
		return &exprNode{op: opField, path: t.text}, nil
	case tokIdent:
		p.next()
		if p.tok.kind != tokLParen {
			if strings.HasSuffix(t.text, ".") || strings.Contains(t.text, "..") {
				return nil, &ExprError{Expr: p.src, Pos: t.pos, Reason: "malformed field path " + strconv.Quote(t.text)}
			}
			return &exprNode{op: opField, path: t.text}, nil
		}
		spec, ok := exprFuncs[t.text]
		if !ok {
			return nil, &ExprError{Expr: p.src, Pos: t.pos, Reason: "unknown function " + strconv.Quote(t.text)}
		}
		p.next() // (
		n := &exprNode{op: spec.op}
		if p.tok.kind != tokRParen {
			for {
				a, err := p.parse(0, depth+1)
				if err != nil {
					return nil, err
				}
				n.args = append(n.args, a)
				if p.tok.kind != tokComma {
					break
				}
				p.next()
			}
		}
		if p.tok.kind != tokRParen {
			return nil, p.errf("expected ',' or ')' in call to %s, found %s", t.text, p.tok.describe())
		}
		p.next()
		if len(n.args) < spec.minArgs || (spec.maxArgs >= 0 && len(n.args) > spec.maxArgs) {
			return nil, &ExprError{Expr: p.src, Pos: t.pos, Reason: sprintf("%s takes %s, got %d", t.text, arity(spec), len(n.args))}
		}
		return n, nil
	case tokLParen:
		p.next()
		n, err := p.parse(0, depth+1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.errf("expected ')', found %s", p.tok.describe())
		}
		p.next()
		return n, nil
	case tokOp:
		if t.text == "-" || t.text == "+" {
			p.next()
			operand, err := p.parse(prefixBP, depth+1)
			if err != nil {
				return nil, err
			}
			if t.text == "+" {
				return operand, nil
			}
			return &exprNode{op: opNeg, args: []*exprNode{operand}}, nil
		}
	}
	if t.kind == tokEOF {
		return nil, p.errf("unexpected end of expression")
	}
	return nil, p.errf("unexpected %s", t.describe())
}

func arity(s funcSpec) string {
	switch {
	case s.maxArgs < 0:
		return sprintf("at least %d arguments", s.minArgs)
	case s.minArgs == 1:
		return "1 argument"
	default:
		return sprintf("%d arguments", s.minArgs)
	}
}

func (n *exprNode) format(b *strings.Builder) {
	switch n.op {
	case opConst:
		b.WriteString(strconv.FormatFloat(n.num, 'g', -1, 64))
	case opField:
		if isPlainPath(n.path) {
			b.WriteString(n.path)
		} else {
			b.WriteByte('`')
			b.WriteString(n.path)
			b.WriteByte('`')
		}
	case opNeg:
		b.WriteByte('-')
		n.args[0].formatIn(b, n.prec() > n.args[0].prec())
	case opAdd, opSub, opMul, opDiv:
		n.args[0].formatIn(b, n.args[0].prec() < n.prec())
		b.WriteString([...]string{opAdd: " + ", opSub: " - ", opMul: " * ", opDiv: " / "}[n.op])
		n.args[1].formatIn(b, n.args[1].prec() <= n.prec())
	default:
		b.WriteString(opNames[n.op])
		b.WriteByte('(')
		for i, a := range n.args {
			if i > 0 {
				b.WriteString(", ")
			}
			a.format(b)
		}
		b.WriteByte(')')
	}
}

// formatIn formats n, between parentheses when paren is true.
func (n *exprNode) formatIn(b *strings.Builder, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	n.format(b)
	if paren {
		b.WriteByte(')')
	}
}

// prec is how tightly n binds when written out: sums 1, products 2,
// negation 3, numbers, fields and calls 4.
func (n *exprNode) prec() int {
	switch n.op {
	case opAdd, opSub:
		return 1
	case opMul, opDiv:
		return 2
	case opNeg:
		return 3
	}
	return 4
}

// isPlainPath reports whether a path can be written as a bare identifier.
func isPlainPath(s string) bool {
	if s == "" || !isIdentStart(s[0]) || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// ---- compiler and stack machine ----

type instr struct {
	op  exprOp
	n   uint8 // argument count (min, max) or field index
	num float64
}

func (e *Expr) compile() error {
	depth, maxDepth := 0, 0
	var emit func(n *exprNode) error
	emit = func(n *exprNode) error {
		if n.op != opConst && n.op != opField && isConstNode(n) {
			v := evalConstNode(n)
			n2 := exprNode{op: opConst, num: v}
			return emit(&n2)
		}
		switch n.op {
		case opConst:
			e.prog = append(e.prog, instr{op: opConst, num: n.num})
			depth++
		case opField:
			idx := -1
			for i, f := range e.fields {
				if f == n.path {
					idx = i
				}
			}
			if idx < 0 {
				if len(e.fields) == maxExprFields {
					return &ExprError{Expr: e.src, Reason: sprintf("more than %d distinct fields", maxExprFields)}
				}
				idx = len(e.fields)
				e.fields = append(e.fields, n.path)
			}
			e.prog = append(e.prog, instr{op: opField, n: uint8(idx)})
			depth++
		default:
			for _, a := range n.args {
				if err := emit(a); err != nil {
					return err
				}
			}
			if len(n.args) > 255 {
				return &ExprError{Expr: e.src, Reason: "too many arguments"}
			}
			e.prog = append(e.prog, instr{op: n.op, n: uint8(len(n.args))})
			depth -= len(n.args) - 1
		}
		if depth > maxDepth {
			maxDepth = depth
		}
		if maxDepth > maxExprStack {
			return &ExprError{Expr: e.src, Reason: "expression too complex"}
		}
		return nil
	}
	return emit(e.root)
}

func isConstNode(n *exprNode) bool {
	switch n.op {
	case opConst:
		return true
	case opField:
		return false
	}
	for _, a := range n.args {
		if !isConstNode(a) {
			return false
		}
	}
	return true
}

func evalConstNode(n *exprNode) float64 {
	if n.op == opConst {
		return n.num
	}
	args := make([]float64, len(n.args))
	for i, a := range n.args {
		args[i] = evalConstNode(a)
	}
	if len(args) > maxExprStack {
		// too many to fit the stack; compile rejects the expression anyway
		return math.NaN()
	}
	var st [maxExprStack]float64
	copy(st[:], args)
	sp := apply(&st, len(args), instr{op: n.op, n: uint8(len(args))})
	return st[sp-1]
}

// run executes the program; vars holds the field values.
func (e *Expr) run(vars *[maxExprFields]float64) float64 {
	var st [maxExprStack]float64
	sp := 0
	for _, in := range e.prog {
		switch in.op {
		case opConst:
			st[sp] = in.num
			sp++
		case opField:
			st[sp] = vars[in.n]
			sp++
		default:
			sp = apply(&st, sp, in)
		}
	}
	return st[sp-1]
}

// apply executes one operator over the top of the stack and returns the
// new stack pointer.
func apply(st *[maxExprStack]float64, sp int, in instr) int {
	switch in.op {
	case opNeg:
		st[sp-1] = -st[sp-1]
	case opAdd:
		st[sp-2] += st[sp-1]
		sp--
	case opSub:
		st[sp-2] -= st[sp-1]
		sp--
	case opMul:
		st[sp-2] *= st[sp-1]
		sp--
	case opDiv:
		st[sp-2] /= st[sp-1]
		sp--
	case opLog:
		st[sp-1] = math.Log(st[sp-1])
	case opExp:
		st[sp-1] = math.Exp(st[sp-1])
	case opSqrt:
		st[sp-1] = math.Sqrt(st[sp-1])
	case opAbs:
		st[sp-1] = math.Abs(st[sp-1])
	case opPow:
		st[sp-2] = math.Pow(st[sp-2], st[sp-1])
		sp--
	case opClamp:
		x, lo, hi := st[sp-3], st[sp-2], st[sp-1]
		if lo > hi {
			x = math.NaN() // an empty range has no answer
		} else {
			x = math.Max(lo, math.Min(x, hi))
		}
		st[sp-3] = x
		sp -= 2
	case opMin, opMax:
		n := int(in.n)
		v := st[sp-n]
		for i := sp - n + 1; i < sp; i++ {
			if in.op == opMin {
				v = math.Min(v, st[i])
			} else {
				v = math.Max(v, st[i])
			}
		}
		sp -= n - 1
		st[sp-1] = v
	}
	return sp
}
