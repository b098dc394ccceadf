package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/throttler/throttler/flow"
)

// FlowBudgets checks the budgets (as Validate does, but nothing else) and
// converts them to flow budgets, in the order of the file. Problems are
// returned as Problems wrapping ErrInvalid.
func (c *Config) FlowBudgets() ([]flow.Budget, error) {
	v := &checker{lines: c.lines}
	v.budgets(c)
	if err := v.problems.err(); err != nil {
		return nil, err
	}
	out := make([]flow.Budget, len(c.Budgets))
	for i, b := range c.Budgets {
		out[i] = b.Flow()
	}
	return out, nil
}

// budgets checks: at least one budget; names set, unique and printable;
// target positive and finite; kind known (an empty kind is the default);
// begin and end, or period, not both; begin before end; reserve at least 0
// and shorter than the window, and only on windows; period positive;
// parents that exist and form no cycle; a score source for scored budgets;
// reward topics for reward budgets; a prior (conversion, reward_delay) at
// least 0, on reward budgets only.
func (v *checker) budgets(c *Config) {
	if len(c.Budgets) == 0 {
		v.add("budgets", "must list at least one budget")
		return
	}
	byName := make(map[string]int, len(c.Budgets))
	for i, b := range c.Budgets {
		p := "budgets[" + strconv.Itoa(i) + "]"
		switch {
		case b.Name == "":
			v.add(p+".name", "must not be empty")
		case strings.IndexFunc(b.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || strings.TrimSpace(b.Name) != b.Name:
			v.add(p+".name", fmt.Sprintf("%q has control characters or leading or trailing space", b.Name))
		default:
			if j, dup := byName[b.Name]; dup {
				v.add(p+".name", fmt.Sprintf("%q is also the name of budgets[%d]", b.Name, j))
			} else {
				byName[b.Name] = i
			}
		}
		switch {
		case math.IsNaN(b.Target) || math.IsInf(b.Target, 0):
			v.add(p+".target", fmt.Sprintf("must be a finite number, got %v", b.Target))
		case b.Target <= 0:
			v.add(p+".target", fmt.Sprintf("must be positive, got %v", b.Target))
		}
		switch b.Kind {
		case "", KindPasses:
		case KindRewards:
			if len(c.Topics.Rewards) == 0 {
				v.add(p+".kind", "a rewards budget needs topics.rewards")
			}
		default:
			v.add(p+".kind", fmt.Sprintf("must be %q or %q, got %q", KindPasses, KindRewards, b.Kind))
		}
		v.budgetPrior(p, b)
		v.budgetTime(p, b)
		v.budgetAction(p, b, c.Budgets)
		if b.Scored && c.Fields.Score == "" && c.Fields.ScoreExpr == "" {
			v.add(p+".scored", "a scored budget needs fields.score or fields.score_expr")
		}
	}
	v.parents(c.Budgets, byName)
}

// budgetPrior checks a rewards budget's prior conversion and delay.
func (v *checker) budgetPrior(p string, b Budget) {
	switch {
	case math.IsNaN(b.Conversion) || math.IsInf(b.Conversion, 0) || b.Conversion < 0:
		v.add(p+".conversion", fmt.Sprintf("must be a finite number ≥ 0, got %v", b.Conversion))
	case b.Conversion != 0 && b.Kind != KindRewards:
		v.add(p+".conversion", "applies to rewards budgets only (kind: rewards)")
	}
	switch {
	case b.RewardDelay < 0:
		v.add(p+".reward_delay", fmt.Sprintf("must be at least 0, got %v", b.RewardDelay))
	case b.RewardDelay != 0 && b.Kind != KindRewards:
		v.add(p+".reward_delay", "applies to rewards budgets only (kind: rewards)")
	}
}

// budgetTime checks the window or period of a budget.
func (v *checker) budgetTime(p string, b Budget) {
	window := !b.Begin.IsZero() || !b.End.IsZero()
	switch {
	case window && b.Period != 0:
		v.add(p+".period", "set begin and end, or period, not both")
		return
	case !window && b.Period == 0:
		v.add(p, "needs begin and end (a window) or period")
		return
	case !window:
		if b.Period < 0 {
			v.add(p+".period", fmt.Sprintf("must be positive, got %v", b.Period))
		}
		if b.Reserve != 0 {
			v.add(p+".reserve", "applies to begin/end budgets only, not to period budgets")
		}
		return
	}
	switch {
	case b.Begin.IsZero():
		v.add(p+".begin", "must be set with end")
	case b.End.IsZero():
		v.add(p+".end", "must be set with begin")
	case !b.End.After(b.Begin):
		v.add(p+".end", fmt.Sprintf("must be after begin (%s)", b.Begin.Format("2006-01-02T15:04:05.999999999Z07:00")))
	case b.Reserve < 0:
		v.add(p+".reserve", fmt.Sprintf("must be at least 0, got %v", b.Reserve))
	case b.Reserve >= b.End.Sub(b.Begin):
		v.add(p+".reserve", fmt.Sprintf("must be shorter than the window from begin to end (%v), got %v", b.End.Sub(b.Begin), b.Reserve))
	}
}

// parents checks that every parent exists and that no chain of parents
// loops; each cycle is reported once, on its first budget in file order.
func (v *checker) parents(bs []Budget, byName map[string]int) {
	reported := make(map[int]bool)
	for i, b := range bs {
		if b.Parent == "" {
			continue
		}
		p := "budgets[" + strconv.Itoa(i) + "].parent"
		j, ok := byName[b.Parent]
		switch {
		case b.Parent == b.Name:
			v.add(p, "a budget cannot be its own parent")
			continue
		case !ok:
			v.add(p, fmt.Sprintf("no budget is named %q", b.Parent))
			continue
		}
		// Follow the chain from i; at most len(bs) steps without a loop.
		chain := []string{b.Name}
		seen := map[int]bool{i: true}
		for steps := 0; steps < len(bs); steps++ {
			chain = append(chain, bs[j].Name)
			if j == i {
				if !reported[i] {
					v.add(p, "parents form a cycle: "+strings.Join(chain, " -> "))
					for k := range seen {
						reported[k] = true
					}
				}
				break
			}
			if seen[j] || bs[j].Parent == "" || bs[j].Parent == bs[j].Name {
				break // a loop not through i, reported from its own members
			}
			seen[j] = true
			next, ok := byName[bs[j].Parent]
			if !ok {
				break
			}
			j = next
		}
	}
}
