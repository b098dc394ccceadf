package config

import (
	"testing"
	"time"
)

func TestBudgetAction(t *testing.T) {
	delay := func(i int) func(c *Config) { return func(c *Config) { c.Budgets[i].Action = ActionDelay } }
	cases := []struct {
		name   string
		change func(c *Config)
		wants  []want
	}{
		{"reject", func(c *Config) { c.Budgets[1].Action = ActionReject }, nil},
		{"unknown", func(c *Config) { c.Budgets[1].Action = "drop" }, []want{{"budgets[1].action", `must be "reject" or "delay", got "drop"`}}},
		{"delay on a window", func(c *Config) { c.Budgets[1].Scored = false; c.Budgets[1].Parent = ""; delay(1)(c) },
			[]want{{"budgets[1].action", "needs a period budget"}}},
		{"delay scored nested window", delay(1), []want{
			{"budgets[1].action", "needs a period budget"},
			{"budgets[1].scored", "cannot also pick the highest scores"},
			{"budgets[1].parent", "cannot be nested"},
		}},
		{"delay rewards", func(c *Config) {
			c.Budgets[2].Begin, c.Budgets[2].End, c.Budgets[2].Period, c.Budgets[2].Parent = time.Time{}, time.Time{}, time.Minute, ""
			delay(2)(c)
		}, []want{{"budgets[2].kind", "counts passes"}}},
		{"delay parent", delay(0), []want{
			{"budgets[1].parent", `"account" is a delay budget`},
			{"budgets[2].parent", `"account" is a delay budget`},
		}},
		{"delay alone", func(c *Config) { c.Budgets[1].Parent, c.Budgets[2].Parent = "", ""; delay(0)(c) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := example(t)
			tc.change(c)
			checkProblems(t, c.Validate(), tc.wants...)
		})
	}
}

func TestDelayBudgetToFlow(t *testing.T) {
	c := example(t)
	if c.Budgets[0].Action != ActionReject {
		t.Fatalf("default action %q, want reject", c.Budgets[0].Action)
	}
	c.Budgets[1].Parent, c.Budgets[2].Parent = "", ""
	c.Budgets[0].Action = ActionDelay
	bs, err := c.FlowBudgets()
	if err != nil {
		t.Fatal(err)
	}
	if !bs[0].Delay || bs[1].Delay {
		t.Fatalf("flow budgets Delay = %v, %v; want true, false", bs[0].Delay, bs[1].Delay)
	}
}

func TestParseAction(t *testing.T) {
	c, err := Parse([]byte(`brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign}
budgets:
  - {name: b, target: 100, period: 1s, action: delay}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Budgets[0].Action != ActionDelay {
		t.Fatalf("action %q, want delay", c.Budgets[0].Action)
	}
}
