package flow

import (
	"errors"
	"fmt"
	"time"
)

// ErrSourceOpen is returned by Tree.Open for a source that is already open.
var ErrSourceOpen = errors.New("flow: source already open")

// Tree holds one controller per budget of a node, each linked to its
// parent: an event of a budget passes only if it fits every level up to the
// root. All methods are safe for concurrent use.
type Tree struct {
	cfg   config
	ctrls map[string]*Controller
	order []*Controller // parents before children
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
	t := &Tree{cfg: cfg, ctrls: map[string]*Controller{}}
	for _, b := range budgets {
		if err := validateBudget(b); err != nil {
			return nil, err
		}
		if _, dup := t.ctrls[b.Name]; dup {
			return nil, &BudgetError{Budget: b.Name, Field: "name", Reason: "defined twice"}
		}
		t.ctrls[b.Name] = newController(b, &t.cfg)
	}
	for _, c := range t.ctrls {
		if c.b.Parent == "" {
			continue
		}
		p, ok := t.ctrls[c.b.Parent]
		if !ok {
			return nil, &BudgetError{Budget: c.b.Name, Field: "parent", Reason: fmt.Sprintf("no budget named %q", c.b.Parent)}
		}
		c.parent = p
	}
	// order parents first, detecting cycles
	state := map[*Controller]int{}
	var visit func(c *Controller) error
	visit = func(c *Controller) error {
		switch state[c] {
		case 1:
			return &BudgetError{Budget: c.b.Name, Field: "parent", Reason: "parents form a cycle"}
		case 2:
			return nil
		}
		state[c] = 1
		if c.parent != nil {
			if err := visit(c.parent); err != nil {
				return err
			}
		}
		state[c] = 2
		t.order = append(t.order, c)
		return nil
	}
	for _, b := range budgets {
		if err := visit(t.ctrls[b.Name]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Controller returns the controller of a budget, or nil.
func (t *Tree) Controller(name string) *Controller { return t.ctrls[name] }

// Controllers returns every controller, parents before children.
func (t *Tree) Controllers() []*Controller { return t.order }

// SetShare sets this node's share of the cluster's traffic sources (e.g.
// its assigned partitions over all partitions, or 1/N of N nodes). It is
// used until peers' reports tell the real traffic, and whenever no peer is
// heard from. Call it on every membership change.
func (t *Tree) SetShare(f float64) {
	if !(f > 0 && f <= 1) {
		return
	}
	for _, c := range t.order {
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
	for _, c := range t.order {
		c.tune(n)
	}
}

// Sync reads every budget's view from ex and re-tunes; call it every sync
// interval, after publishing Reports.
func (t *Tree) Sync(now time.Time, ex Exchange) {
	n := now.UnixNano()
	var buf []Report
	for _, c := range t.order {
		buf = ex.View(c.b.Name, buf[:0])
		c.sync(n, buf)
	}
}

// Reports appends the current report of every open source of every budget.
func (t *Tree) Reports(now time.Time, dst []Report) []Report {
	n := now.UnixNano()
	for _, c := range t.order {
		dst = c.reports(n, dst)
	}
	return dst
}

// Source is one source's set of lanes, one per budget. Like a Lane, it
// belongs to one goroutine.
type Source struct {
	name  string
	lanes map[string]*Lane
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Lane returns the lane of a budget, or nil for an unknown budget.
func (s *Source) Lane(budget string) *Lane { return s.lanes[budget] }

// Open starts counting a source on this node. restore, if not nil, returns
// the counters a budget had for this source when it was last committed
// (so a partition that moves between nodes continues where it was).
func (t *Tree) Open(source string, now time.Time, restore func(budget string) (Report, bool)) (*Source, error) {
	n := now.UnixNano()
	for _, c := range t.order {
		c.mu.Lock()
		_, open := c.lanes[source]
		c.mu.Unlock()
		if open {
			return nil, fmt.Errorf("%w: %q", ErrSourceOpen, source)
		}
	}
	s := &Source{name: source, lanes: make(map[string]*Lane, len(t.order))}
	for _, c := range t.order { // parents first, so a child can link
		var r *Report
		if restore != nil {
			if rep, ok := restore(c.b.Name); ok {
				r = &rep
			}
		}
		l := c.open(source, n, r)
		if c.parent != nil {
			l.parent = s.lanes[c.parent.b.Name]
		}
		s.lanes[c.b.Name] = l
	}
	return s, nil
}

// Close stops counting a source and returns its final reports.
func (t *Tree) Close(s *Source, now time.Time) []Report {
	n := now.UnixNano()
	out := make([]Report, 0, len(s.lanes))
	for _, c := range t.order {
		if l := s.lanes[c.b.Name]; l != nil {
			out = append(out, c.close(l, n))
		}
	}
	return out
}
