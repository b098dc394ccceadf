package config

import (
	"strings"

	"github.com/throttler/throttler/flow"
)

// CheckBudget checks one budget on its own with the rules of the config
// file (see FlowBudgets): name, target, kind, window or period, reserve, and
// that it is not its own parent. What needs the rest of a config (that a
// parent exists, a score source for a scored budget, reward topics for a
// rewards budget) is left to whoever runs the budget. An empty Kind is
// accepted as the default. Problems name the budget's YAML keys ("target",
// "end"); "" is the budget as a whole.
func CheckBudget(b Budget) Problems {
	c := &Config{Budgets: []Budget{b}}
	if b.Kind == KindRewards {
		c.Topics.Rewards = []string{"rewards"}
	}
	if b.Scored {
		c.Fields.Score = "score"
	}
	c.Budgets[0].Parent = ""
	v := &checker{}
	v.budgets(c)
	if b.Parent != "" && b.Parent == b.Name {
		v.add("budgets[0].parent", "a budget cannot be its own parent")
	}
	ps := v.problems
	for i := range ps {
		ps[i].Path = strings.TrimPrefix(strings.TrimPrefix(ps[i].Path, "budgets[0]"), ".")
	}
	return ps
}

// Flow converts the budget to a flow budget.
func (b Budget) Flow() flow.Budget {
	return flow.Budget{
		Name:    b.Name,
		Target:  b.Target,
		Begin:   b.Begin,
		End:     b.End,
		Reserve: b.Reserve,
		Period:  b.Period,
		Rewards: b.Kind == KindRewards,
		Scored:  b.Scored,
		Parent:  b.Parent,
		Delay:   b.Action == ActionDelay,
	}
}
