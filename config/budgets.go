package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/throttler/throttler/flow"
)

// FlowBudgets checks the budgets (as Validate does, but nothing else) and
// converts them to flow budgets, in the order of the file. Problems are
// returned as Problems wrapping ErrInvalid.
func (c *Config) FlowBudgets() ([]flow.Budget, error) {
	v := c.checker()
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
		v.add("budgets", "must list at least one budget (here or in budgets_file)")
		return
	}
	byName := make(map[string]int, len(c.Budgets))
	children := childIndex(c.Budgets)
	for i, b := range c.Budgets {
		p := budgetPath{i: i}
		switch {
		case b.Name == "":
			v.add(p.field("name"), "must not be empty")
		case len(b.Name) > flow.MaxNameBytes:
			v.add(p.field("name"), fmt.Sprintf("is %d bytes long, more than %d", len(b.Name), flow.MaxNameBytes))
		case strings.IndexFunc(b.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || strings.TrimSpace(b.Name) != b.Name:
			v.add(p.field("name"), fmt.Sprintf("%q has control characters or leading or trailing space", b.Name))
		default:
			if j, dup := byName[b.Name]; dup {
				v.add(p.field("name"), fmt.Sprintf("%q is also the name of %s", b.Name, v.budgetRef(j)))
			} else {
				byName[b.Name] = i
			}
		}
		if reason := flow.CheckTarget(b.Target); reason != "" {
			v.add(p.field("target"), reason)
		}
		switch b.Kind {
		case "", KindPasses:
		case KindRewards:
			if len(c.Topics.Rewards) == 0 {
				v.add(p.field("kind"), "a rewards budget needs topics.rewards")
			}
		default:
			v.add(p.field("kind"), fmt.Sprintf("must be %q or %q, got %q", KindPasses, KindRewards, b.Kind))
		}
		v.budgetPrior(p, b)
		v.budgetTime(p, b)
		v.budgetAction(p, b, children)
		if b.Scored && c.Fields.Score == "" && c.Fields.ScoreExpr == "" {
			v.add(p.field("scored"), "a scored budget needs fields.score or fields.score_expr")
		}
	}
	v.parents(c.Budgets, byName)
}

// budgetPath is the path of a budget's definition: at, or budgets[i]
// when at is empty, made into a string only for a problem (a
// budgets_file of a million budgets has few).
type budgetPath struct {
	at string
	i  int
}

func (p budgetPath) String() string {
	if p.at != "" {
		return p.at
	}
	return "budgets[" + strconv.Itoa(p.i) + "]"
}

// field returns the path of the budget's field f.
func (p budgetPath) field(f string) string { return p.String() + "." + f }

// budgetPrior checks a rewards budget's prior conversion and delay.
func (v *checker) budgetPrior(p budgetPath, b Budget) {
	switch {
	case math.IsNaN(b.Conversion) || math.IsInf(b.Conversion, 0) || b.Conversion < 0:
		v.add(p.field("conversion"), fmt.Sprintf("must be a finite number ≥ 0, got %v", b.Conversion))
	case b.Conversion != 0 && b.Kind != KindRewards:
		v.add(p.field("conversion"), "applies to rewards budgets only (kind: rewards)")
	}
	switch {
	case b.RewardDelay < 0:
		v.add(p.field("reward_delay"), fmt.Sprintf("must be at least 0, got %v", b.RewardDelay))
	case b.RewardDelay != 0 && b.Kind != KindRewards:
		v.add(p.field("reward_delay"), "applies to rewards budgets only (kind: rewards)")
	}
}

// budgetTime checks the window or period of a budget.
func (v *checker) budgetTime(p budgetPath, b Budget) {
	window := !b.Begin.IsZero() || !b.End.IsZero()
	switch {
	case window && b.Period != 0:
		v.add(p.field("period"), "set begin and end, or period, not both")
		return
	case !window && b.Period == 0:
		v.add(p.String(), "needs begin and end (a window) or period")
		return
	case !window:
		if b.Period < 0 {
			v.add(p.field("period"), fmt.Sprintf("must be positive, got %v", b.Period))
		}
		if b.Reserve != 0 {
			v.add(p.field("reserve"), "applies to begin/end budgets only, not to period budgets")
		}
		return
	}
	for _, t := range []struct {
		field string
		at    time.Time
	}{{"begin", b.Begin}, {"end", b.End}} {
		if reason := flow.CheckTime(t.at); !t.at.IsZero() && reason != "" {
			v.add(p.field(t.field), reason)
			return
		}
	}
	switch {
	case b.Begin.IsZero():
		v.add(p.field("begin"), "must be set with end")
	case b.End.IsZero():
		v.add(p.field("end"), "must be set with begin")
	case !b.End.After(b.Begin):
		v.add(p.field("end"), fmt.Sprintf("must be after begin (%s)", b.Begin.Format("2006-01-02T15:04:05.999999999Z07:00")))
	case b.Reserve < 0:
		v.add(p.field("reserve"), fmt.Sprintf("must be at least 0, got %v", b.Reserve))
	case b.Reserve >= b.End.Sub(b.Begin):
		v.add(p.field("reserve"), fmt.Sprintf("must be shorter than the window from begin to end (%v), got %v", b.End.Sub(b.Begin), b.Reserve))
	}
}

// parents checks that every parent exists and that no chain of parents
// loops; each cycle is reported once, on its first budget in file order.
// It costs O(budgets): a walk up the chain of parents stops at a budget
// an earlier walk settled, so every budget is walked once, however deep
// the tree.
func (v *checker) parents(bs []Budget, byName map[string]int) {
	const (
		unvisited = iota
		walking   // on the current walk
		settled
	)
	state := make([]uint8, len(bs))
	cycles := map[int]string{} // the first budget of a cycle -> the chain
	next := func(i int) (int, bool) {
		b := bs[i]
		if b.Parent == "" || b.Parent == b.Name {
			return 0, false
		}
		j, ok := byName[b.Parent]
		return j, ok
	}
	var walk []int
	for i := range bs {
		walk = walk[:0]
		j, more := i, true
		for more && state[j] == unvisited {
			state[j] = walking
			walk = append(walk, j)
			j, more = next(j)
		}
		if more && state[j] == walking { // back on this walk: a cycle through j
			loop := walk[slices.Index(walk, j):]
			first := slices.Index(loop, slices.Min(loop))
			names := make([]string, 0, len(loop)+1)
			for k := range len(loop) + 1 {
				names = append(names, bs[loop[(first+k)%len(loop)]].Name)
			}
			cycles[loop[first]] = strings.Join(names, " -> ")
		}
		for _, k := range walk {
			state[k] = settled
		}
	}
	depth := depths(bs, byName)
	for i, b := range bs {
		if b.Parent == "" {
			continue
		}
		p := "budgets[" + strconv.Itoa(i) + "].parent"
		if depth[i] == flow.MaxDepth+1 { // the first budget past the limit on its chain
			v.add(p, fmt.Sprintf("nests %d budgets deep (itself included), more than %d", depth[i], flow.MaxDepth))
		}
		_, ok := byName[b.Parent]
		switch {
		case b.Parent == b.Name:
			v.add(p, "a budget cannot be its own parent")
		case !ok:
			v.add(p, fmt.Sprintf("no budget is named %q", b.Parent))
		case cycles[i] != "":
			v.add(p, "parents form a cycle: "+cycles[i])
		}
	}
}

// depths returns each budget's depth (1 without a parent, counting from
// a missing parent as from none), or -2 for a budget on or under a cycle
// (reported as such). It costs O(budgets).
func depths(bs []Budget, byName map[string]int) []int {
	const walking, cyclic = -1, -2
	depth := make([]int, len(bs))
	var walk []int
	for i := range bs {
		walk = walk[:0]
		j := i
		for depth[j] == 0 {
			walk = append(walk, j)
			depth[j] = walking
			b := bs[j]
			k, ok := byName[b.Parent]
			if b.Parent == "" || !ok {
				break
			}
			if b.Parent == b.Name {
				depth[j] = cyclic
				break
			}
			j = k
		}
		base := depth[j]
		if base == walking && j != walk[len(walk)-1] || base == cyclic {
			for _, k := range walk {
				depth[k] = cyclic
			}
			continue
		}
		base = max(base, 0)
		for n := len(walk) - 1; n >= 0; n-- {
			base++
			depth[walk[n]] = base
		}
	}
	return depth
}
