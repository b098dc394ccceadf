package config

import (
	"errors"
	"strings"
	"testing"
)

// TestParseReportsEverythingInOnePass: a file with a misspelt field and
// three other mistakes gets all four problems at once, in line order,
// and nothing that only restates one of them.
func TestParseReportsEverythingInOnePass(t *testing.T) {
	const yaml = `brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign}
sync_interval: soon
budgets:
  - {name: a, target: 100, period: 1m}
  - name: b
    begn: 2026-11-22T10:00:00Z
    end: 2026-11-22T11:00:00Z
    target: -5
  - {name: c, target: 10, period: 1m, parent: nobody}
`
	_, err := Parse([]byte(yaml))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err %v is not Problems", err)
	}
	want := []string{
		"sync_interval: want a duration such as 1s or 100ms, got \"soon\" (line 4)",
		"budgets[1].begn: unknown field; did you mean `begin`? (line 8)",
		"budgets[1].target: must be positive, got -5 (line 10)",
		"budgets[2].parent: no budget is named \"nobody\" (line 11)",
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseRequired(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []wantLine
	}{
		{"experiment without allocation", minimal + `layers:
  - name: l
    experiments:
      - name: e
        variants: [{name: v, weight: 1, topic: t}]
`, []wantLine{{"layers[0].experiments[0].allocation", "is required (must be a percentage more than 0 and at most 100)", 14}}},
		{"zero written is not missing", minimal + `layers:
  - name: l
    experiments:
      - {name: e, allocation: 0, variants: [{name: v, weight: 1, topic: t}]}
`, []wantLine{{"layers[0].experiments[0].allocation", "must be a percentage more than 0 and at most 100, got 0", 14}}},
		{"budget without target", strings.Replace(minimal, "    target: 100\n", "", 1),
			[]wantLine{{"budgets[0].target", "is required (must be positive)", 8}}},
		{"budget without name", strings.Replace(minimal, "  - name: a\n    target: 100", "  - target: 100", 1),
			[]wantLine{{"budgets[0].name", "is required", 8}}},
		{"no fields.budget", strings.Replace(minimal, "  budget: campaign\n", "  key: user\n", 1),
			[]wantLine{{"fields.budget", "is required (must name the event field that holds the budget name)", 5}}},
		// A default fills an unset field: its problems keep their words.
		{"defaulted field", strings.Replace(minimal, "input: [events]", "input: [throttler.dead-letter]", 1),
			[]wantLine{{"topics.dead_letter", `topic "throttler.dead-letter" is also topics.input[0]`, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			var ws []want
			for _, w := range tc.want {
				ws = append(ws, want{w.path, w.reason})
			}
			for _, p := range checkProblems(t, err, ws...) {
				for _, w := range tc.want {
					if p.Path == w.path && p.Line != w.line {
						t.Errorf("%v: line %d, want %d", p, p.Line, w.line)
					}
				}
			}
		})
	}
}

func TestParseSuggestions(t *testing.T) {
	for _, tc := range []struct{ yaml, path, want string }{
		{minimal + "sync_intreval: 1s\n", "sync_intreval", "did you mean `sync_interval`?"},
		{minimal + "bugdets_file: x\n", "bugdets_file", "did you mean `budgets_file`?"},
		{strings.Replace(minimal, "  output: passed\n", "  output: passed\n  Rejected: r\n", 1), "topics.Rejected", "did you mean `rejected`?"},
		{minimal + "colour: red\n", "colour", "unknown field"},
	} {
		_, err := Parse([]byte(tc.yaml))
		ps := checkProblems(t, err, want{tc.path, tc.want})
		if tc.path == "colour" && strings.Contains(ps[0].Reason, "did you mean") {
			t.Errorf("%s: a far key got a suggestion: %v", tc.path, ps[0])
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"begn", "begin"}, {"ned", "end"}, {"targte", "target"}, {"Period", "period"},
		{"parnet", "parent"}, {"x", ""}, {"colour", ""},
	} {
		if got := suggest(tc.key, budgetType); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"begn", "begin", 1}, {"outptu", "output", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestParseWrongTypeIsNotRestated: a value of the wrong type is one
// problem, not also the zero value's.
func TestParseWrongTypeIsNotRestated(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(minimal, "target: 100", "target: lots", 1) + "brokers_x: 1\nlayers: oops\n"))
	checkProblems(t, err,
		want{"budgets[0].target", `want a number, got "lots"`},
		want{"brokers_x", "unknown field"},
		want{"layers", "want a list"})
}

// TestParseDuplicateKeyAndValidation: a repeated key is reported and the
// first value validated.
func TestParseDuplicateKeyAndValidation(t *testing.T) {
	_, err := Parse([]byte(minimal + "delivery: twice\ndelivery: exactly-once\n"))
	checkProblems(t, err, want{"delivery", "duplicate key"}, want{"delivery", `got "twice"`})
}
