package config

import (
	"fmt"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// TestValidateLimits checks the limits flow sets (flow/limits.go) in a
// config file: a target within [flow.MinTarget, flow.MaxTarget], budgets
// nested at most flow.MaxDepth deep (one problem per chain, on its first
// budget past the limit).
func TestValidateLimits(t *testing.T) {
	for _, target := range []float64{1.7e308, 5e-324, flow.MaxTarget * 10} {
		c := example(t)
		c.Budgets[1].Target = target
		checkProblems(t, c.Validate(), want{"budgets[1].target", "between"})
	}
	chain := func(c *Config, n int) {
		for i := range n {
			b := Budget{Name: fmt.Sprintf("level-%02d", i), Target: 10, Period: time.Minute}
			if i > 0 {
				b.Parent = fmt.Sprintf("level-%02d", i-1)
			}
			c.Budgets = append(c.Budgets, b)
		}
	}
	c := example(t)
	chain(c, flow.MaxDepth)
	checkProblems(t, c.Validate())
	c = example(t)
	chain(c, flow.MaxDepth+3)
	first := len(c.Budgets) - 3
	checkProblems(t, c.Validate(), want{fmt.Sprintf("budgets[%d].parent", first), "17 budgets deep"})
	if ps := CheckBudget(Budget{Name: "x", Target: 1.7e308, Period: time.Minute}); len(ps) != 1 || ps[0].Path != "target" {
		t.Fatalf("CheckBudget of a target of 1.7e308: %v", ps)
	}
}

// TestRewardsMaxValue checks rewards.max_value: above 0, at most
// flow.MaxTarget, and only with reward topics.
func TestRewardsMaxValue(t *testing.T) {
	for _, m := range []float64{-1, flow.MaxTarget * 2} {
		c := example(t)
		c.Rewards.MaxValue = m
		checkProblems(t, c.Validate(), want{"rewards.max_value", "above 0"})
	}
	c := example(t)
	c.Rewards.MaxValue = 1000
	checkProblems(t, c.Validate())
	c.Topics.Rewards, c.Rewards.Budget, c.Rewards.Value = nil, "", ""
	for i := range c.Budgets {
		c.Budgets[i].Kind, c.Budgets[i].Conversion, c.Budgets[i].RewardDelay = "", 0, 0
	}
	checkProblems(t, c.Validate(), want{"rewards", "topics.rewards is empty"})
}

// TestValidateTimeRange checks begin and end within flow.MinTime and
// flow.MaxTime.
func TestValidateTimeRange(t *testing.T) {
	c := example(t)
	c.Budgets[1].End = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	checkProblems(t, c.Validate(), want{"budgets[1].end", "between"})
	c = example(t)
	c.Budgets[1].Begin = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	checkProblems(t, c.Validate(), want{"budgets[1].begin", "between"})
}
