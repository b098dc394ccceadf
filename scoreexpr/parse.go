package scoreexpr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

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
		reason = fmt.Sprintf(format, args...)
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
			return nil, &ExprError{Expr: p.src, Pos: t.pos, Reason: fmt.Sprintf("%s takes %s, got %d", t.text, arity(spec), len(n.args))}
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
		return fmt.Sprintf("at least %d arguments", s.minArgs)
	case s.minArgs == 1:
		return "1 argument"
	default:
		return fmt.Sprintf("%d arguments", s.minArgs)
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
