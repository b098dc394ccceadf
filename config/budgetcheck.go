package config

import (
	"slices"
	"strings"
	"time"

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
	if b.Parent != "" && b.Parent != b.Name {
		// A stand-in parent, so that the parent's existence is not judged
		// here; its own problems are dropped below.
		c.Budgets = append(c.Budgets, Budget{Name: b.Parent, Target: 1, Period: time.Second})
	}
	v := &checker{}
	v.budgets(c)
	var ps Problems
	for _, p := range v.problems {
		if p.Path == "budgets[0]" || strings.HasPrefix(p.Path, "budgets[0].") {
			p.Path = strings.TrimPrefix(strings.TrimPrefix(p.Path, "budgets[0]"), ".")
			ps = append(ps, p)
		}
	}
	return ps
}

// ControlTopic returns the default control topic of a group,
// "<group>.changes" (not "<group>.control", which an experiment's
// "control" variant may well use).
func ControlTopic(group string) string { return group + ".changes" }

// Flow converts the budget to a flow budget.
func (b Budget) Flow() flow.Budget {
	return flow.Budget{
		Name:        b.Name,
		Target:      b.Target,
		Begin:       b.Begin,
		End:         b.End,
		Reserve:     b.Reserve,
		Period:      b.Period,
		Rewards:     b.Kind == KindRewards,
		Conversion:  b.Conversion,
		RewardDelay: b.RewardDelay,
		Scored:      b.Scored,
		Parent:      b.Parent,
		Delay:       b.Action == ActionDelay,
	}
}

// CheckBudgetLines checks budgets read from a budgets file (ReadBudgets
// gives them and their lines) as one set, as `throttler budget import`
// does before it writes them: each budget with the rules of CheckBudget,
// names unique, parents that exist among them or in known, no cycle, no
// delay budget as a parent. known are the budgets defined elsewhere (on
// the control topic, in a config file): a budget of the file replaces the
// known one of its name, and the known budgets' own problems are not
// reported. Problems name the file and the line. It costs
// O(len(budgets) + len(known)).
func CheckBudgetLines(budgets []Budget, lines []int, file string, known []Budget) Problems {
	c := &Config{Budgets: slices.Clip(budgets)}
	// What needs the rest of a config is left to whoever runs the
	// budgets, as in CheckBudget.
	c.Topics.Rewards = []string{"rewards"}
	c.Fields.Score = "score"
	inFile := make(map[string]bool, len(budgets))
	for _, b := range budgets {
		inFile[b.Name] = true
	}
	for _, k := range known {
		if !inFile[k.Name] {
			c.Budgets = append(c.Budgets, k)
		}
	}
	c.file = &fileBudgets{path: file, lines: lines}
	v := c.checker()
	v.budgets(c)
	var ps Problems
	for _, p := range v.problems {
		if p.File != "" {
			ps = append(ps, p)
		}
	}
	return ps
}
