package config

import (
	"errors"
	"os"
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
