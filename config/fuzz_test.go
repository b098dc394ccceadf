package config

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error it returns is
// Problems wrapping ErrInvalid with a reason for each problem, and that a
// config it accepts validates again and converts to flow budgets.
func FuzzParse(f *testing.F) {
	ex, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ex)
	f.Add([]byte(minimal))
	f.Add([]byte(""))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("brokers: [a:1]\nbudgets: [{name: x, parent: x, target: .nan}]\n"))
	f.Add([]byte("budgets:\n  - {begin: 2026-11-22, end: 2026-11-22T10:00:00Z, colour: 1}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte(minimal + "security: {tls: {enabled: true, server_name: k}, sasl: {mechanism: scram-sha-512, username: u, password: p}}\n"))
	f.Add([]byte(minimal + "security: {sasl: {mechanism: PLAIN, username: u, password_env: HOME}}\ndedup_window: 10\n"))
	f.Add([]byte(minimal + "security: {tls: {cert_file: x}, sasl: {username: u}}\ndedup_window: -1\n"))
	f.Add([]byte("layers: [{name: l, experiments: [{name: e, allocation: 50, variants: [{name: v, weight: 1, topic: t}]}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || !errors.Is(err, ErrInvalid) || len(ps) == 0 {
				t.Fatalf("error %T %v is not Problems", err, err)
			}
			for _, p := range ps {
				if p.Reason == "" {
					t.Fatalf("problem without reason: %+v", p)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config fails Validate: %v", err)
		}
		if _, err := c.FlowBudgets(); err != nil {
			t.Fatalf("parsed config fails FlowBudgets: %v", err)
		}
	})
}

// FuzzBudgetLine checks that a budget line walked in place
// (parseBudgetLine) and decoded through encoding/json
// (parseBudgetLineSlow) give the same budget and the same problems.
func FuzzBudgetLine(f *testing.F) {
	f.Add([]byte(`{"name":"campaign/000001","target":15000,"begin":"2026-11-22T10:00:00Z","end":"2026-11-22T12:00:00Z","parent":"account/7"}`))
	f.Add([]byte(`{"name":"account/7","target":1e5,"period":"1h","scored":true,"kind":"rewards","action":"delay","reserve":"30s"}`))
	f.Add([]byte(`{"name":7,"target":"lots","period":"1m","scored":"yes","colour":"red","Name":"x"}`))
	f.Add([]byte(`{"name":"a\u00e9\n","target":-0.5e-3,"name":"b","parent":null,"target":1e400}`))
	f.Add([]byte(`{"name":{"x":1},"target":[1],"begin":"2026-11-22","period":"half"}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"name":`))
	f.Add([]byte("{\"name\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, fps := parseBudgetLine(line)
		slow, sps := parseBudgetLineSlow(line)
		if fps.Error() != sps.Error() {
			t.Fatalf("problems differ:\n walked: %v\n  json:  %v", fps, sps)
		}
		if len(fps) == 0 && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("budgets differ:\n walked: %+v\n  json:  %+v", fast, slow)
		}
	})
}

// TestBudgetLinePathsAgree runs FuzzBudgetLine's check over every line of
// one or two fields built from the budget keys, two unknown ones and
// values of every JSON type.
func TestBudgetLinePathsAgree(t *testing.T) {
	keys := append(budgetKeys[:], "Name", "colour")
	vals := []string{`"x"`, `"a\u00e9\n"`, `"2026-11-22T10:00:00Z"`, `"1h"`, `"delay"`, `7`, `-0.5e-3`, `1e400`, `true`, `false`, `null`, `{}`, `[1]`, `{"a":[null]}`, `"\ud800"`, `"\ud83d\ude00x"`, `"\/\t"`, `01`, `1.`, `1E+2`, `- 1`}
	var fields []string
	for _, k := range keys {
		for _, v := range vals {
			fields = append(fields, `"`+k+`":`+v)
		}
	}
	n := 0
	check := func(line string) {
		n++
		fast, fps := parseBudgetLine([]byte(line))
		slow, sps := parseBudgetLineSlow([]byte(line))
		if fps.Error() != sps.Error() {
			t.Fatalf("%s: problems differ:\n walked: %v\n  json:  %v", line, fps, sps)
		}
		if len(fps) == 0 && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: budgets differ:\n walked: %+v\n  json:  %+v", line, fast, slow)
		}
	}
	for _, a := range fields {
		check("{" + a + "}")
		for _, b := range fields {
			check("{" + a + "," + b + "}")
		}
	}
	t.Logf("%d lines", n)
}
