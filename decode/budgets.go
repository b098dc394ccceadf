package decode

import (
	"strconv"
)

// BudgetTable maps budget names to the indices partitions keep their lanes
// and counters by. Indices are stable: a table only ever grows (a deleted
// budget keeps its index, marked dead, and gets it back if re-added), so a
// counter or lane indexed under an older table still means the same
// budget. A table is immutable; the worker swaps a new one in atomically
// when the budgets change, and each partition picks it up at the start of
// a batch.
type BudgetTable struct {
	names []string
	live  []bool
	byNam map[string]int // live names only
}

// NewBudgetTable returns a table of names, all live, indexed in order; a
// name given twice is an error.
func NewBudgetTable(names []string) (*BudgetTable, error) {
	t := &BudgetTable{byNam: make(map[string]int, len(names))}
	for _, b := range names {
		if _, dup := t.byNam[b]; dup {
			return nil, &ConfigError{Option: "budgets", Reason: "duplicate budget " + strconv.Quote(b)}
		}
		t.byNam[b] = len(t.names)
		t.names = append(t.names, b)
		t.live = append(t.live, true)
	}
	return t, nil
}

// With returns a table whose live budgets are names; earlier names keep
// their indices.
func (t *BudgetTable) With(names []string) *BudgetTable {
	n := &BudgetTable{
		names: append([]string(nil), t.names...),
		live:  make([]bool, len(t.names), len(t.names)+len(names)),
		byNam: make(map[string]int, len(names)),
	}
	all := make(map[string]int, len(t.names))
	for i, b := range t.names {
		all[b] = i
	}
	for _, b := range names {
		i, ok := all[b]
		if !ok {
			i = len(n.names)
			n.names = append(n.names, b)
			n.live = append(n.live, false)
		}
		n.live[i] = true
		n.byNam[b] = i
	}
	return n
}

// Index returns the index of live budget b, or -1. A few names are
// compared one by one, faster than hashing.
func (t *BudgetTable) Index(b string) int {
	if len(t.names) <= 8 {
		for i, n := range t.names {
			if n == b && t.live[i] {
				return i
			}
		}
		return -1
	}
	if i, ok := t.byNam[b]; ok {
		return i
	}
	return -1
}

// LiveNames returns the live budgets, in index order.
func (t *BudgetTable) LiveNames() []string {
	out := make([]string, 0, len(t.byNam))
	for i, b := range t.names {
		if t.live[i] {
			out = append(out, b)
		}
	}
	return out
}

// Names returns every budget of the table, deleted ones too, in index
// order. The slice must not be modified.
func (t *BudgetTable) Names() []string { return t.names }

// Live reports whether the budget of index i is live (not deleted).
func (t *BudgetTable) Live(i int) bool { return t.live[i] }

// WithoutBudgets returns a copy of d that accepts every budget name
// (BudgetIndex -1), for a reader that learns which budgets exist
// elsewhere: the worker's decide stage asks its flow tree, whose budgets
// change while it runs.
func (d *Decoder) WithoutBudgets() *Decoder {
	c := *d
	c.tab = nil
	return &c
}
