package scoreexpr

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const exprDoc = `{"a":2,"b":3,"c":{"d":-4},"z":0,"s":"x","n":null,"big":1e308,"k-v":5}`

func TestExprEval(t *testing.T) {
	cases := []struct {
		src  string
		want float64
	}{
		{"1", 1},
		{"1 + 2 * 3", 7},
		{"(1 + 2) * 3", 9},
		{"a - b - 1", -2},
		{"a / b / 2", 2.0 / 3 / 2},
		{"-a", -2},
		{"--a", 2},
		{"-a * b", -6},
		{"+a", 2},
		{"c.d", -4},
		{"abs(c.d)", 4},
		{"sqrt(16)", 4},
		{"pow(a, b)", 8},
		{"log(exp(b))", 3},
		{"min(a, b, 1)", 1},
		{"max(a, b, 1)", 3},
		{"clamp(c.d, 0, 1)", 0},
		{"clamp(10, 0, 1)", 1},
		{"min(1/z, 7)", 7},
		{"`k-v` * 2", 10},
		{"1e3 + .5", 1000.5},
		{"2.5e-1", 0.25},
		{" a\t*\nb ", 6},
		{"log(1 + a) * 0", 0},
	}
	for _, c := range cases {
		e, err := ParseExpr(c.src)
		if err != nil {
			t.Fatalf("ParseExpr(%q): %v", c.src, err)
		}
		got, err := e.Eval(exprDoc)
		if err != nil {
			t.Fatalf("Eval(%q): %v", c.src, err)
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%q = %v, want %v", c.src, got, c.want)
		}
		// the canonical form evaluates the same
		e2, err := ParseExpr(e.String())
		if err != nil {
			t.Fatalf("reparse %q (canonical of %q): %v", e.String(), c.src, err)
		}
		if got2, _ := e2.Eval(exprDoc); got2 != got {
			t.Errorf("canonical %q = %v, original %v", e.String(), got2, got)
		}
	}
}

func TestExprEvalErrors(t *testing.T) {
	cases := []struct {
		src    string
		reason Failure
	}{
		{"1 / z", NotFinite},
		{"z / z", NotFinite},
		{"log(-1)", NotFinite},
		{"big * 10", NotFinite},
		{"missing + 1", MissingField},
		{"n + 1", MissingField},
		{"s + 1", FieldNotNumber},
		{"c + 1", FieldNotNumber},
		{"clamp(1, 2, 1)", NotFinite},
	}
	for _, c := range cases {
		e := MustParseExpr(c.src)
		_, err := e.Eval(exprDoc)
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Failure != c.reason {
			t.Errorf("%q: err %v, want failure %s", c.src, err, c.reason)
		}
		if !errors.Is(err, ErrEval) {
			t.Errorf("%q: error does not wrap ErrEval", c.src)
		}
	}
}

func TestExprParseErrors(t *testing.T) {
	for _, src := range []string{
		"", "1 +", "(1", "1)", "foo(1)", "log()", "log(1, 2)", "pow(1)", "min(1)",
		"clamp(1,2)", "1 2", "a..b", "a.", "`", "``", "1.2.3", "#", "a * * b", "log(1,)",
		"1 ^ 2", "é",
	} {
		_, err := ParseExpr(src)
		var pe *ExprError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidExpr) {
			t.Errorf("ParseExpr(%q) = %v, want *ExprError", src, err)
		}
	}
	deep := ""
	for range 100 {
		deep += "("
	}
	if _, err := ParseExpr(deep + "1"); err == nil {
		t.Error("deep nesting accepted")
	}
	wide := "min(1"
	for range 100 {
		wide += ", a"
	}
	if _, err := ParseExpr(wide + ")"); err == nil {
		t.Error("too many stack slots accepted")
	}
	many := "0"
	for i := range 20 {
		many += " + f" + string(rune('a'+i))
	}
	if _, err := ParseExpr(many); err == nil {
		t.Error("more than 16 fields accepted")
	}
}

func TestExprFields(t *testing.T) {
	e := MustParseExpr("a + b * a + `x y`")
	got := e.Fields()
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "x y" {
		t.Fatalf("Fields = %q", got)
	}
	if v := e.EvalVars(1, 2, 3); v != 1+2*1+3 {
		t.Fatalf("EvalVars = %v", v)
	}
	if s := e.String(); s != "a + b * a + `x y`" {
		t.Fatalf("String = %q", s)
	}
}

func TestExprEvalAllocs(t *testing.T) {
	e := MustParseExpr("log(1 + a) * clamp(b, 0, 10) + max(abs(c.d), 1) - pow(a, 2) / sqrt(b)")
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := e.Eval(exprDoc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Eval allocates %v times per run", allocs)
	}
}

func BenchmarkExprEval(b *testing.B) {
	e := MustParseExpr("log(1 + a) * clamp(b, 0, 10) + max(abs(c.d), 1)")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = e.Eval(exprDoc)
	}
}

func FuzzScoreExpr(f *testing.F) {
	for _, s := range []string{
		"1", "a + b * c.d", "-(a)", "log(1 + a) * 2", "min(a, b, 3)", "clamp(a, 0, 1)",
		"pow(2, 1e3)", "1/0", "`k-v`", "((((a))))", "exp(exp(exp(a)))", "max(1,", "a..b",
		"sqrt(-1)", "1e309", "abs(-0)",
		// near the nesting limit: the canonical form must parse too
		strings.Repeat("-", 33) + "0", strings.Repeat("1+", 70) + "1", strings.Repeat("(", 63) + "a" + strings.Repeat(")", 63),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseExpr(src)
		if err != nil {
			if !errors.Is(err, ErrInvalidExpr) {
				t.Fatalf("error %v does not wrap ErrInvalidExpr", err)
			}
			return
		}
		v, err := e.Eval(exprDoc)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q evaluated to %v without error", src, v)
		}
		canon := e.String()
		e2, err2 := ParseExpr(canon)
		if err2 != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, src, err2)
		}
		if c2 := e2.String(); c2 != canon {
			t.Fatalf("canonical form not stable: %q -> %q", canon, c2)
		}
		v2, err2 := e2.Eval(exprDoc)
		if (err == nil) != (err2 == nil) || (err == nil && math.Float64bits(v) != math.Float64bits(v2)) {
			t.Fatalf("%q = %v, %v; canonical %q = %v, %v", src, v, err, canon, v2, err2)
		}
	})
}
