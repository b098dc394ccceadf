package config

import (
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/splitter"
)

const limitsYAML = `
brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed, rejected: rejected}
fields: {budget: campaign, key: user}
budgets:
  - {name: account, target: 1000, period: 1h}
layers:
  - name: ui
    experiments:
      - name: checkout
        allocation: 50
        fallback: rejected
        variants:
          - name: control
            weight: 1
            topic: exp.control
          - name: treatment
            weight: 1
            topic: exp.treatment
            limit: {target: 500, period: 10m}
          - name: bold
            weight: 1
            topic: exp.bold
            limit: {target: 20, begin: 2026-11-22T10:00:00Z, end: 2026-11-22T11:00:00Z, fallback: output}
`

func TestVariantLimits(t *testing.T) {
	c, err := Parse([]byte(limitsYAML))
	if err != nil {
		t.Fatal(err)
	}
	ls := c.VariantLimits()
	if len(ls) != 2 {
		t.Fatalf("limits = %+v", ls)
	}
	tr, bold := ls[0], ls[1]
	if tr.Budget.Name != "variant:ui/checkout/treatment" || tr.Budget.Target != 500 || tr.Budget.Period != 10*time.Minute || tr.Fallback != splitter.FallbackRejected {
		t.Fatalf("treatment limit = %+v (the experiment's fallback applies)", tr)
	}
	if bold.Budget.Name != "variant:ui/checkout/bold" || bold.Budget.End.Sub(bold.Budget.Begin) != time.Hour || bold.Fallback != splitter.FallbackOutput {
		t.Fatalf("bold limit = %+v (its own fallback applies)", bold)
	}
}

func TestVariantLimitProblems(t *testing.T) {
	bad := strings.NewReplacer(
		"fallback: rejected", "fallback: nowhere",
		"{target: 500, period: 10m}", "{target: -5}",
		"fallback: output}", "fallback: elsewhere}",
		"name: account", "name: variant:x",
	).Replace(limitsYAML)
	_, err := Parse([]byte(bad))
	checkProblems(t, err,
		want{"budgets[0].name", "reserved for variant limits"},
		want{"layers[0].experiments[0].fallback", `got "nowhere"`},
		want{"layers[0].experiments[0].variants[1].limit.target", "must be positive"},
		want{"layers[0].experiments[0].variants[1].limit", "needs begin and end (a window) or period"},
		want{"layers[0].experiments[0].variants[2].limit.fallback", `got "elsewhere"`},
	)
}
