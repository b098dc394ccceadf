package flow

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrSourceOpen is returned by Tree.Open for a source that is already open.
var ErrSourceOpen = errors.New("flow: source already open")

// Tree holds one controller per budget of a node, each linked to its
// parent: an event of a budget passes only if it fits every level up to the
// root. The budgets can be changed while the tree runs (Update). All methods
// are safe for concurrent use.
type Tree struct {
	cfg config
	mu  sync.Mutex // serialises Update, Open, Close and Source.Refresh
	st  atomic.Pointer[treeState]
}

// treeState is one version of the tree's budgets; immutable once stored.
type treeState struct {
	version uint64
	ctrls   map[string]*Controller
	order   []*Controller // parents before children
}

// NewTree validates the budgets and creates their controllers.
func NewTree(budgets []Budget, opts ...Option) (*Tree, error) {
	cfg := defaultCfg()
	for _, o := range opts {
		o.apply(&cfg)
	}
	cfg.derive()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	order, err := plan(budgets)
	if err != nil {
		return nil, err
	}
	t := &Tree{cfg: cfg}
	st := &treeState{ctrls: make(map[string]*Controller, len(budgets))}
	for _, i := range order {
		c := newController(budgets[i], &t.cfg)
		if p := budgets[i].Parent; p != "" {
			c.parent = st.ctrls[p]
		}
		st.ctrls[c.name] = c
		st.order = append(st.order, c)
	}
	t.st.Store(st)
	return t, nil
}

// plan validates a set of budgets as a whole (each budget's fields, unique
// names, parents that exist and form no cycle) and returns their indices,
// parents before children.
func plan(budgets []Budget) ([]int, error) {
	byName := make(map[string]int, len(budgets))
	for i, b := range budgets {
		if err := validateBudget(b); err != nil {
			return nil, err
		}
		if _, dup := byName[b.Name]; dup {
			return nil, &BudgetError{Budget: b.Name, Field: "name", Reason: "defined twice"}
		}
		byName[b.Name] = i
	}
	for _, b := range budgets {
		j, ok := byName[b.Parent]
		if b.Parent != "" && !ok {
			return nil, &BudgetError{Budget: b.Name, Field: "parent", Reason: fmt.Sprintf("no budget named %q", b.Parent)}
		}
		if ok && budgets[j].Delay {
			return nil, &BudgetError{Budget: b.Name, Field: "parent", Reason: fmt.Sprintf("%q is a delay budget, which cannot be a parent", b.Parent)}
		}
	}
	state := make([]int8, len(budgets))
	order := make([]int, 0, len(budgets))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return &BudgetError{Budget: budgets[i].Name, Field: "parent", Reason: "parents form a cycle"}
		case 2:
			return nil
		}
		state[i] = 1
		if p := budgets[i].Parent; p != "" {
			if err := visit(byName[p]); err != nil {
				return err
			}
		}
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i := range budgets {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Changes lists what an Update did, by budget name.
type Changes struct {
	Added, Changed, Deleted []string
}

// Empty reports whether the update changed nothing.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Changed)+len(c.Deleted) == 0 }

// Update replaces the tree's budgets with budgets while the tree runs. The
// set is validated as a whole, as NewTree does; on an error nothing
// changes.
//
//   - A budget whose definition changed keeps its controller: its counters,
//     its peers' reports and its measured rates stay, and it is re-tuned at
//     once from them under the new definition (a new target or window is
//     paced from what was already achieved). Counts of the current period
//     carry over when the period or window itself changes.
//   - A new budget gets a controller; its lanes appear on every open source
//     at that source's next Refresh.
//   - A budget left out is deleted: its lanes stop deciding at their
//     source's next Refresh. A budget that is still some budget's parent
//     cannot be deleted (the set is invalid).
//
// Lanes belong to their source's goroutine, so Update never touches them:
// each source picks the change up in Source.Refresh, which its goroutine
// calls between events. Controllers change at once.
func (t *Tree) Update(budgets []Budget, now time.Time) (Changes, error) {
	order, err := plan(budgets)
	if err != nil {
		return Changes{}, err
	}
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.st.Load()
	st := &treeState{version: old.version + 1, ctrls: make(map[string]*Controller, len(budgets))}
	var ch Changes
	for _, i := range order {
		b := budgets[i]
		c := old.ctrls[b.Name]
		switch {
		case c == nil:
			c = newController(b, &t.cfg)
			ch.Added = append(ch.Added, b.Name)
		case !sameBudget(c.Budget(), b):
			c.redefine(b, n)
			ch.Changed = append(ch.Changed, b.Name)
		}
		st.ctrls[b.Name] = c
		st.order = append(st.order, c)
	}
	for _, c := range old.order {
		if st.ctrls[c.name] != c {
			ch.Deleted = append(ch.Deleted, c.name)
		}
	}
	if ch.Empty() {
		return ch, nil
	}
	for _, c := range st.order {
		c.parent = nil
		if p := c.Budget().Parent; p != "" {
			c.parent = st.ctrls[p]
		}
	}
	t.st.Store(st)
	return ch, nil
}

// Budgets returns the tree's budgets, parents before children.
func (t *Tree) Budgets() []Budget {
	st := t.st.Load()
	out := make([]Budget, len(st.order))
	for i, c := range st.order {
		out[i] = c.Budget()
	}
	return out
}

// Budget returns the definition of a budget, and whether the tree has it.
func (t *Tree) Budget(name string) (Budget, bool) {
	if c := t.st.Load().ctrls[name]; c != nil {
		return c.Budget(), true
	}
	return Budget{}, false
}

// Len returns the number of budgets.
func (t *Tree) Len() int { return len(t.st.Load().order) }

// Version counts the tree's updates: 0 at creation, one more for every
// Update that changed something.
func (t *Tree) Version() uint64 { return t.st.Load().version }

// Controller returns the controller of a budget, or nil.
func (t *Tree) Controller(name string) *Controller { return t.st.Load().ctrls[name] }

// Controllers returns every controller, parents before children.
func (t *Tree) Controllers() []*Controller { return t.st.Load().order }

// SetShare sets this node's share of the cluster's traffic sources (e.g.
// its assigned partitions over all partitions, or 1/N of N nodes). It is
// used until peers' reports tell the real traffic, and whenever no peer is
// heard from. Call it on every membership change.
func (t *Tree) SetShare(f float64) {
	if !(f > 0 && f <= 1) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg.priorShare = f // for controllers added later
	for _, c := range t.st.Load().order {
		c.mu.Lock()
		if c.share != f {
			c.share, c.rewarm = f, true
		}
		c.mu.Unlock()
	}
}

// Tune re-tunes every controller from local traffic; call it every tune
// interval.
func (t *Tree) Tune(now time.Time) {
	n := now.UnixNano()
	for _, c := range t.st.Load().order {
		c.tune(n)
	}
}

// Sync reads every budget's view from ex and re-tunes; call it every sync
// interval, after publishing Reports.
func (t *Tree) Sync(now time.Time, ex Exchange) {
	n := now.UnixNano()
	var buf []Report
	for _, c := range t.st.Load().order {
		buf = ex.View(c.name, buf[:0])
		c.sync(n, buf)
	}
}

// Reports appends the current report of every open source of every budget.
func (t *Tree) Reports(now time.Time, dst []Report) []Report {
	n := now.UnixNano()
	for _, c := range t.st.Load().order {
		dst = c.reports(n, dst)
	}
	return dst
}

// Source is one source's set of lanes, one per budget. Like a Lane, it
// belongs to one goroutine.
type Source struct {
	t       *Tree
	name    string
	version uint64 // the tree version the lanes follow
	lanes   map[string]*Lane
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Lane returns the lane of a budget, or nil for an unknown budget.
func (s *Source) Lane(budget string) *Lane { return s.lanes[budget] }

// Open starts counting a source on this node. restore, if not nil, returns
// the counters a budget had for this source when it was last committed
// (so a partition that moves between nodes continues where it was).
// Budgets restore knows nothing of start from zero; what it holds for
// budgets the tree does not have is ignored.
func (t *Tree) Open(source string, now time.Time, restore func(budget string) (Report, bool)) (*Source, error) {
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.st.Load()
	for _, c := range st.order {
		c.mu.Lock()
		_, open := c.lanes[source]
		c.mu.Unlock()
		if open {
			return nil, fmt.Errorf("%w: %q", ErrSourceOpen, source)
		}
	}
	s := &Source{t: t, name: source, version: st.version, lanes: make(map[string]*Lane, len(st.order))}
	for _, c := range st.order { // parents first, so a child can link
		s.lanes[c.name] = c.open(source, n, restored(restore, c.name))
	}
	s.link(st)
	return s, nil
}

func restored(restore func(string) (Report, bool), budget string) *Report {
	if restore == nil {
		return nil
	}
	if rep, ok := restore(budget); ok {
		return &rep
	}
	return nil
}

// link points every lane at its parent's lane of the same source.
func (s *Source) link(st *treeState) {
	for _, c := range st.order {
		l := s.lanes[c.name]
		l.parent = nil
		if c.parent != nil {
			l.parent = s.lanes[c.parent.name]
		}
	}
}

// Refresh brings the source's lanes in line with the tree after an Update:
// lanes of new budgets open (restored like Open does), lanes of deleted
// budgets close, lanes of changed budgets adopt the new definition, and
// parents are re-linked. It reports whether anything changed; when not, it
// costs one atomic load. Call it from the source's goroutine, between
// decisions (e.g. at the start of each batch); Lane pointers taken before
// a Refresh that returned true may be stale.
func (s *Source) Refresh(now time.Time, restore func(budget string) (Report, bool)) bool {
	if s.t.st.Load().version == s.version {
		return false
	}
	n := now.UnixNano()
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	st := s.t.st.Load()
	for name, l := range s.lanes {
		if st.ctrls[name] != l.c {
			l.c.close(l, n)
			delete(s.lanes, name)
		}
	}
	for _, c := range st.order {
		if l := s.lanes[c.name]; l != nil {
			c.adapt(l, n)
		} else {
			s.lanes[c.name] = c.open(s.name, n, restored(restore, c.name))
		}
	}
	s.link(st)
	s.version = st.version
	return true
}

// Close stops counting a source and returns its final reports.
func (t *Tree) Close(s *Source, now time.Time) []Report {
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Report, 0, len(s.lanes))
	st := t.st.Load()
	for _, c := range st.order {
		if l := s.lanes[c.name]; l != nil && l.c == c {
			out = append(out, c.close(l, n))
		}
	}
	for name, l := range s.lanes { // budgets deleted since the last Refresh
		if st.ctrls[name] != l.c {
			l.c.close(l, n)
		}
	}
	return out
}
