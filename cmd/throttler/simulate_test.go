package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// simulate's report carries, for a scored window budget, the paced
// offline optimum at the run's own deviation and the run's precision over
// it; for an unscored one, neither.
func TestSimulateReportsTheOptimum(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "crowd.yaml")
	const yaml = `
duration: 60s
seed: 3
nodes:
  - {name: a, rate: 200, steps: [{at: 20s, rate: 2000}, {at: 25s, rate: 200}]}
  - {name: b, rate: 200}
budgets:
  - {name: scored, target: 2400, begin: 0s, end: 60s, score: normal}
  - {name: plain, target: 2400, begin: 0s, end: 60s}
`
	if err := os.WriteFile(scenario, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, context.Background(), "simulate", "--scenario", scenario)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Budgets []struct {
			Name      string   `json:"name"`
			Precision *float64 `json:"score_precision"`
			Optimum   *float64 `json:"optimum_precision"`
			Ratio     *float64 `json:"precision_ratio"`
		} `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, b := range rep.Budgets {
		switch b.Name {
		case "scored":
			if b.Optimum == nil || b.Ratio == nil || b.Precision == nil {
				t.Fatalf("scored: optimum %v, ratio %v", b.Optimum, b.Ratio)
			}
			if !(*b.Optimum > 0 && *b.Optimum <= 1) || *b.Ratio != *b.Precision / *b.Optimum {
				t.Errorf("scored: precision %.4f, optimum %.4f, ratio %.4f", *b.Precision, *b.Optimum, *b.Ratio)
			}
		case "plain":
			if b.Optimum != nil || b.Ratio != nil {
				t.Errorf("plain: optimum %v, ratio %v, want none", b.Optimum, b.Ratio)
			}
		}
	}
}
