package config

import "fmt"

// Action says what a budget does with an event over its limit.
type Action string

// Budget actions.
const (
	// ActionReject rejects the event (to the rejected topic, or counted).
	// The default.
	ActionReject Action = "reject"
	// ActionDelay holds the event back: the worker stops fetching the
	// event's partition and resumes it when the next period refills the
	// budget, so consumer lag grows and nothing is rejected. Only for
	// period budgets counting passes, neither scored nor nested.
	ActionDelay Action = "delay"
)

// budgetAction checks a budget's action and what a delay budget excludes;
// children returns the indices of the budgets that name b as their parent.
func (v *checker) budgetAction(p budgetPath, b Budget, children func(name string) []int) {
	switch b.Action {
	case "", ActionReject:
		return
	case ActionDelay:
	default:
		v.add(p.field("action"), fmt.Sprintf("must be %q or %q, got %q", ActionReject, ActionDelay, b.Action))
		return
	}
	if b.Period == 0 {
		v.add(p.field("action"), "delay needs a period budget (at most target per period): a delayed event waits for the next period's refill, and a begin/end window has none")
	}
	if b.Scored {
		v.add(p.field("scored"), "a delay budget passes events in the order they arrive; it cannot also pick the highest scores")
	}
	if b.Kind == KindRewards {
		v.add(p.field("kind"), "a delay budget counts passes; rewards come after the pass and cannot be waited for")
	}
	if b.Parent != "" {
		v.add(p.field("parent"), "a delay budget cannot be nested: pausing a partition for one level would hold up the others")
	}
	for _, i := range children(b.Name) {
		v.add(fmt.Sprintf("budgets[%d].parent", i), fmt.Sprintf("%q is a delay budget, which cannot be a parent", b.Name))
	}
}

// childIndex returns a function listing, by parent name, the indices of
// the budgets that have that parent (a budget naming itself left out). The
// index is built on the first call, in O(budgets), so that checking every
// delay budget's children costs O(budgets) in all.
func childIndex(bs []Budget) func(name string) []int {
	var kids map[string][]int
	return func(name string) []int {
		if kids == nil {
			kids = make(map[string][]int)
			for i, c := range bs {
				if c.Parent != "" && c.Parent != c.Name {
					kids[c.Parent] = append(kids[c.Parent], i)
				}
			}
		}
		return kids[name]
	}
}
