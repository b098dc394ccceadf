package clusterstatus

import (
	"container/heap"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// Query selects the budgets a status shows.
type Query struct {
	// Budgets are budget names or glob patterns ('*' any run of
	// characters, '/' included; '?' one character; [abc] and [a-z] one
	// of a set); empty: every budget.
	Budgets []string `json:"budgets,omitempty"`
	// Top keeps the Top budgets of largest |deviation| (ties by name),
	// largest first; 0 keeps all, by name.
	Top int `json:"top,omitempty"`
}

// ErrQuery is wrapped by the errors of Query.Compile.
var ErrQuery = errors.New("invalid status query")

// Catalog is what budget selection reads: a stats.View satisfies it.
type Catalog interface {
	// BudgetNames returns the name of every definition, in any order.
	BudgetNames() []string
	// BudgetDef returns one definition.
	BudgetDef(name string) (stats.BudgetDef, bool)
	// View appends the reports of budget's sources to dst.
	View(budget string, dst []flow.Report) []flow.Report
}

// Check reports what is wrong with q (a negative Top, an empty name, a
// pattern that does not compile), or nil.
func (q Query) Check() error {
	_, err := q.compile()
	return err
}

// matcher is a compiled Query.Budgets.
type matcher struct {
	names []string // exact names, sorted, when no pattern is a glob
	re    *regexp.Regexp
}

// compile compiles q's patterns; a matcher with neither names nor re
// matches everything.
func (q Query) compile() (matcher, error) {
	var m matcher
	var alts []string
	glob := false
	for _, p := range q.Budgets {
		if p == "" {
			return m, errors.Join(ErrQuery, errors.New("empty budget name"))
		}
		glob = glob || strings.ContainsAny(p, "*?[")
		alts = append(alts, globRegexp(p))
	}
	if q.Top < 0 {
		return m, errors.Join(ErrQuery, errors.New("top must be at least 0"))
	}
	if !glob {
		m.names = slices.Compact(slices.Sorted(slices.Values(q.Budgets)))
		return m, nil
	}
	re, err := regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
	if err != nil {
		return m, errors.Join(ErrQuery, err)
	}
	m.re = re
	return m, nil
}

// globRegexp translates a glob into a regular expression.
func globRegexp(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			if j := strings.IndexByte(p[i+1:], ']'); j > 0 {
				set := p[i+1 : i+1+j]
				if set[0] == '!' {
					set = "^" + set[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(set, `\`, `\\`) + "]")
				i += j + 1
				continue
			}
			b.WriteString(regexp.QuoteMeta("["))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// EachBudget calls fn with the status at now of each budget q selects:
// by name, or with q.Top the Top of largest |deviation|, largest first. It
// stops at fn's first error and returns it, with the number of budgets
// that matched q.Budgets (before Top). limitOf maps a variant limit's
// budget to its "layer/experiment/variant" (Budget.Variant); nil for
// none.
//
// It computes one budget at a time from its definition and its sources'
// reports (Catalog.View into one reused slice, O(sources) each) and keeps
// only what it hands to fn: the Top best with q.Top, nothing otherwise.
// Exact names cost a lookup each; a glob, or no name, walks every name
// BudgetNames returns, in its order with q.Top (the heap's order does not
// depend on it) and sorted otherwise, and looks up the ones it matches.
func EachBudget(src Catalog, now time.Time, q Query, limitOf map[string]string, fn func(Budget) error) (matched int, err error) {
	m, err := q.compile()
	if err != nil {
		return 0, err
	}
	var scratch []flow.Report
	top := &byDeviation{}
	visit := func(d stats.BudgetDef) error {
		matched++
		scratch = src.View(d.Budget.Name, scratch[:0])
		b := budget(d.Budget, scratch, now)
		b.Variant = limitOf[b.Name]
		if q.Top == 0 {
			return fn(b)
		}
		if top.Len() < q.Top {
			heap.Push(top, b)
		} else if top.less(top.bs[0], b) {
			top.bs[0] = b
			heap.Fix(top, 0)
		}
		return nil
	}
	names := m.names // exact names; else every name, matched below
	if names == nil {
		if names = src.BudgetNames(); q.Top == 0 {
			slices.Sort(names)
		}
	}
	for _, name := range names {
		if m.re != nil && !m.re.MatchString(name) {
			continue
		}
		d, ok := src.BudgetDef(name)
		if !ok { // not defined, or deleted since
			continue
		}
		if err := visit(d); err != nil {
			return matched, err
		}
	}
	// The heap's root is the smallest kept; hand them out largest first.
	slices.SortFunc(top.bs, func(a, b Budget) int {
		switch {
		case top.less(b, a):
			return -1
		case top.less(a, b):
			return 1
		}
		return 0
	})
	for _, b := range top.bs {
		if err := fn(b); err != nil {
			return matched, err
		}
	}
	return matched, nil
}

// byDeviation is a min-heap of budgets by |deviation|, then by name
// (the later name the smaller, so that ties keep the first names).
type byDeviation struct{ bs []Budget }

func (h *byDeviation) less(a, b Budget) bool {
	da, db := math.Abs(a.Deviation), math.Abs(b.Deviation)
	if da != db {
		return da < db
	}
	return a.Name > b.Name
}
func (h *byDeviation) Len() int           { return len(h.bs) }
func (h *byDeviation) Less(i, j int) bool { return h.less(h.bs[i], h.bs[j]) }
func (h *byDeviation) Swap(i, j int)      { h.bs[i], h.bs[j] = h.bs[j], h.bs[i] }
func (h *byDeviation) Push(x any)         { h.bs = append(h.bs, x.(Budget)) }
func (h *byDeviation) Pop() any {
	x := h.bs[len(h.bs)-1]
	h.bs = h.bs[:len(h.bs)-1]
	return x
}
