package scoreexpr

import (
	"fmt"
	"math"
)

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
					return &ExprError{Expr: e.src, Reason: fmt.Sprintf("more than %d distinct fields", maxExprFields)}
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
