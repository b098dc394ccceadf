package control

import (
	"bytes"
	"slices"

	"github.com/throttler/throttler/config"
)

// Import is what writing a set of budget definitions to the control topic
// takes: the definitions to write, and what the others already are.
type Import struct {
	// Write are the definitions to write, parents before their children
	// (so that workers reading them in order never hold a child that
	// waits for its parent), otherwise in the order given.
	Write []config.Budget
	// Added counts the budgets of Write the control topic has no
	// definition of (none, a deletion or a reset), Changed those it
	// defines otherwise, Unchanged those it already defines so.
	Added, Changed, Unchanged int
}

// PlanImport compares budgets (valid, names distinct: see
// config.CheckBudgetLines) with current, the newest record of each name
// on the control topic, and returns what to write: a budget whose
// definition the topic already holds is not written again, so importing
// the same file twice writes nothing the second time. Definitions compare
// as the control topic stores them (EncodeSet), with an empty kind or
// action read as its default. It costs O(len(budgets)).
func PlanImport(budgets []config.Budget, current map[string]Record) (Import, error) {
	var im Import
	var write []config.Budget
	for _, b := range budgets {
		cur, ok := current[b.Name]
		if !ok || cur.Op != OpSet {
			im.Added++
			write = append(write, b)
			continue
		}
		same, err := sameDefinition(b, cur.Budget)
		if err != nil {
			return Import{}, err
		}
		if same {
			im.Unchanged++
			continue
		}
		im.Changed++
		write = append(write, b)
	}
	im.Write = parentsFirst(write)
	return im, nil
}

// sameDefinition reports whether a and b encode alike once defaults are
// filled in.
func sameDefinition(a, b config.Budget) (bool, error) {
	_, va, err := EncodeSet(normalized(a))
	if err != nil {
		return false, err
	}
	_, vb, err := EncodeSet(normalized(b))
	if err != nil {
		return false, err
	}
	return bytes.Equal(va, vb), nil
}

func normalized(b config.Budget) config.Budget {
	if b.Kind == "" {
		b.Kind = config.KindPasses
	}
	if b.Action == "" {
		b.Action = config.ActionReject
	}
	return b
}

// parentsFirst orders bs by their depth among bs (a budget whose parent
// is not in bs has depth 0), stably: parents come before their children.
// The depth of each budget is computed once, O(len(bs)); bs must hold no
// cycle (config.CheckBudgetLines).
func parentsFirst(bs []config.Budget) []config.Budget {
	at := make(map[string]int, len(bs))
	for i, b := range bs {
		at[b.Name] = i
	}
	depth := make([]int, len(bs))
	for i := range depth {
		depth[i] = -1
	}
	var walk []int
	for i := range bs {
		walk = walk[:0]
		j, d := i, 0
		for depth[j] < 0 {
			walk = append(walk, j)
			p, ok := at[bs[j].Parent]
			if bs[j].Parent == "" || !ok || p == j || len(walk) > len(bs) {
				d = -1 // the root of this walk has depth 0
				break
			}
			j = p
		}
		if d == 0 {
			d = depth[j] // walk stopped at a budget of known depth
		}
		for k := len(walk) - 1; k >= 0; k-- {
			d++
			depth[walk[k]] = d
		}
	}
	idx := make([]int, len(bs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return depth[a] - depth[b] })
	out := make([]config.Budget, len(bs))
	for k, i := range idx {
		out[k] = bs[i]
	}
	return out
}
