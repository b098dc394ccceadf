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

// Tree holds the budgets of a node, each linked to its parent: an event of
// a budget passes only if it fits every level up to the root. The budgets
// can be changed while the tree runs (Apply, Update).
//
// Its cost follows activity, not the number of budgets B:
//
//   - every budget has a definition (a few hundred bytes, no controller,
//     no lane);
//   - a budget gets a Controller when a source of this node opens its
//     first lane, or a lane of one of its children (lanes open on a
//     budget's first event on a source, see Source.Get). The new
//     controller reads its peers' reports from the Exchange at once (Peers,
//     SetExchange) and tunes, so that its first decisions know the
//     cluster. It starts from what the node knows beyond the budget: that
//     the node offered nothing for it before (its own traffic history
//     begins with the tree's first Tune or Sync, so that a backlog read
//     at its first event is not taken for its rate), and the exchange's
//     lateness that the node's other controllers learnt;
//   - a controller whose last lane closed is kept for DropAfter (a source
//     that reopens meanwhile finds it as it was), then dropped;
//   - Tune and Sync visit only the controllers that had traffic or are due
//     (see Tune); Apply costs O(changes × depth); each source follows a
//     change in O(changes since its last Refresh).
//
// The zero value is not usable: create a Tree with NewTree. All methods are
// safe for concurrent use.
type Tree struct {
	cfg   config
	ex    atomic.Pointer[exchangeRef]
	alive atomic.Int64 // the tuner ran recently enough for parameters until then
	began atomic.Int64 // the instant of the first visit round (0: none yet)
	// resumed is the instant of the first visit round after a gap of more
	// than config.frozen since the one before (0: none): the node was
	// frozen, or its clock stepped forward (see Controller.resuming)
	resumed atomic.Int64
	// lateness is the exchange's lateness as the node's controllers last
	// learnt it (see Controller.lateness): a property of the exchange, not
	// of a budget, which a controller created later starts from.
	lateness atomic.Int64

	// mu guards the definitions, the active controllers, the open
	// sources, the due queue and the controllers waiting for a Sync.
	mu      sync.RWMutex
	defs    defTable
	version atomic.Uint64 // defs.version, for Source.Refresh without the lock
	active  []*Controller // by Controller.idx
	sources map[string]*Source
	due     dueQueue
	pending []*Controller

	busyMu sync.Mutex
	busy   []*Controller // marked by their lanes since the last visit round

	visitMu   sync.Mutex // one visit round (Tune, Sync) at a time
	rounds    uint64
	lastRound int64
	visitBuf  []*Controller
	spare     []*Controller
	// syncEx is the exchange the last Sync read: the visits it held back
	// (Tree.hold) read their peers from it when they come
	syncEx Exchange
	reps   []Report
}

type exchangeRef struct{ ex Exchange }

// NewTree validates the budgets and creates the tree. No controller exists
// until a source opens a lane.
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
	t := &Tree{cfg: cfg, sources: map[string]*Source{}}
	t.defs.byName = make(map[string]*def, len(budgets))
	for _, i := range order { // parents first
		x := &def{b: budgets[i]}
		t.defs.insert(x)
		t.linkParent(x)
	}
	if cfg.ex != nil {
		t.SetExchange(cfg.ex)
	}
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
	// Parents come before children in order: a budget's depth is its
	// parent's plus one.
	depth := make([]int, len(budgets))
	for _, i := range order {
		depth[i] = 1
		if p := budgets[i].Parent; p != "" {
			depth[i] += depth[byName[p]]
		}
		if depth[i] > MaxDepth {
			return nil, depthError(budgets[i].Name, depth[i])
		}
	}
	return order, nil
}

// Changes lists what an Update or an Apply did, by budget name.
type Changes struct {
	Added, Changed, Deleted []string
}

// Empty reports whether the update changed nothing.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Changed)+len(c.Deleted) == 0 }

// Apply changes some of the tree's budgets while the tree runs, in
// O(len(changes) × depth of the tree): the budgets the changes name are
// added, replaced or deleted, the others stay. The changes are validated
// together, against the tree: each budget's fields, parents that exist
// after the changes and form no cycle, no budget deleted while another
// still names it as its parent, no delay budget as a parent, a name at most
// once. On an error nothing changes. A change to a budget's identical
// definition changes nothing.
//
//   - A budget whose definition changed keeps its controller (if it has
//     one on this node): its counters, its peers' reports and its measured
//     rates stay, and it is re-tuned at once from them under the new
//     definition (a new target or window is paced from what was already
//     achieved). Counts of the current period carry over when the period
//     or window itself changes.
//   - A new budget's lanes open on its first event on each source.
//   - A deleted budget's controller stops: its lanes stop deciding at their
//     source's next Refresh.
//
// Lanes belong to their source's goroutine, so Apply never touches them:
// each source picks the change up in Source.Refresh, which its goroutine
// calls between events. Controllers change at once. Each Apply that
// changed something counts one more Version.
func (t *Tree) Apply(changes []Change, now time.Time) (Changes, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.defs.check(changes); err != nil {
		return Changes{}, err
	}
	return t.applyLocked(changes, now.UnixNano()), nil
}

// Update replaces the tree's budgets with budgets while the tree runs: the
// set is validated as a whole, as NewTree does, then applied as the
// changes (see Apply) that turn the tree's budgets into it. A budget left
// out is deleted; a budget that is still some budget's parent cannot be
// (the set is invalid). It costs O(len(budgets)) plus Apply's cost.
func (t *Tree) Update(budgets []Budget, now time.Time) (Changes, error) {
	order, err := plan(budgets)
	if err != nil {
		return Changes{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	in := make(map[string]bool, len(budgets))
	var cs []Change
	for _, i := range order {
		b := budgets[i]
		in[b.Name] = true
		if x := t.defs.get(b.Name); x == nil || !sameBudget(x.b, b) {
			cs = append(cs, Change{Budget: b})
		}
	}
	for x := t.defs.head; x != nil; x = x.next {
		if !in[x.b.Name] {
			cs = append(cs, Change{Budget: Budget{Name: x.b.Name}, Delete: true})
		}
	}
	return t.applyLocked(cs, now.UnixNano()), nil
}

// applyLocked applies validated changes. Called under t.mu.
func (t *Tree) applyLocked(cs []Change, n int64) Changes {
	var ch Changes
	var relink []*def
	bumped := false
	for _, c := range cs {
		name := c.Budget.Name
		x := t.defs.get(name)
		switch {
		case c.Delete:
			t.unlinkParent(x)
			t.defs.remove(x)
			t.orphan(x)
			ch.Deleted = append(ch.Deleted, name)
		case x == nil:
			x = &def{b: c.Budget}
			t.defs.insert(x)
			relink = append(relink, x)
			ch.Added = append(ch.Added, name)
		case sameBudget(x.b, c.Budget):
			continue
		default:
			t.unlinkParent(x)
			x.b = c.Budget
			relink = append(relink, x)
			ch.Changed = append(ch.Changed, name)
			if x.ctrl != nil {
				x.ctrl.redefine(c.Budget, n)
			}
		}
		if !bumped {
			t.defs.version++
			bumped = true
		}
		t.defs.logged(name)
	}
	for _, x := range relink { // once every new budget exists
		t.linkParent(x)
	}
	t.version.Store(t.defs.version)
	return ch
}

func (t *Tree) linkParent(x *def) {
	if p := x.b.Parent; p != "" {
		x.parent = t.defs.get(p)
		x.parent.kids++
	}
}

func (t *Tree) unlinkParent(x *def) {
	if x.parent != nil {
		x.parent.kids--
		x.parent = nil
	}
}

// Budgets returns the tree's budgets, parents before children. It costs
// O(B).
func (t *Tree) Budgets() []Budget {
	t.mu.Lock() // Budgets marks the definitions it walks
	defer t.mu.Unlock()
	return t.defs.budgets()
}

// EachBudget calls fn with each budget's definition, in the order of
// Budgets, without copying them all: at a million budgets Budgets makes a
// slice of about 140 MB. fn must not modify the budget, keep the pointer,
// or call the tree.
func (t *Tree) EachBudget(fn func(b *Budget)) {
	t.mu.Lock() // as Budgets
	defer t.mu.Unlock()
	t.defs.each(fn)
}

// Budget returns the definition of a budget, and whether the tree has it.
func (t *Tree) Budget(name string) (Budget, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if x := t.defs.get(name); x != nil {
		return x.b, true
	}
	return Budget{}, false
}

// Len returns the number of budgets.
func (t *Tree) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.defs.len()
}

// Version counts the tree's updates: 0 at creation, one more for every
// Update or Apply that changed something.
func (t *Tree) Version() uint64 { return t.version.Load() }

// Controller returns the controller of a budget while it has one on this
// node (a lane of it, or of a child, is open here, or closed less than
// DropAfter ago), or nil. Budget tells whether the tree has the budget.
func (t *Tree) Controller(name string) *Controller {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if x := t.defs.get(name); x != nil {
		return x.ctrl
	}
	return nil
}

// Controllers returns the controllers the node has now (see Controller),
// parents before children when activated together.
func (t *Tree) Controllers() []*Controller {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]*Controller(nil), t.active...)
}

// SetExchange sets the exchange controllers read their peers' reports from
// when they are created and when they resume after missing syncs (see
// Peers).
func (t *Tree) SetExchange(ex Exchange) {
	if ex == nil {
		t.ex.Store(nil)
		return
	}
	t.ex.Store(&exchangeRef{ex})
}

func (t *Tree) exchange() Exchange {
	if r := t.ex.Load(); r != nil {
		return r.ex
	}
	return nil
}

// SetShare sets this node's share of the cluster's traffic sources (e.g.
// its assigned partitions over all partitions, or 1/N of N nodes). It is
// used until peers' reports tell the real traffic. Call it on every
// membership change. The controllers it changes are visited at the next
// Tune or Sync.
func (t *Tree) SetShare(f float64) {
	if !(f > 0 && f <= 1) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg.priorShare = f // for controllers created later
	for _, c := range t.active {
		c.mu.Lock()
		changed := c.share != f
		if changed {
			c.share, c.rewarm, c.forced = f, true, true
			c.rest.Store(0)
		}
		c.mu.Unlock()
		if changed {
			t.schedule(c)
		}
	}
}

// Reports appends the current report of every open lane of every
// controller. It costs O(open lanes); Source.Changed lists only what
// changed.
func (t *Tree) Reports(now time.Time, dst []Report) []Report {
	n := now.UnixNano()
	for _, c := range t.Controllers() {
		dst = c.reports(n, dst)
	}
	return dst
}

// activate creates the controller of budget x at n. Called under t.mu;
// the caller runs activated once the lock is released.
func (t *Tree) activate(x *def, n int64) *Controller {
	c := newController(x.b, &t.cfg)
	c.tree, c.def, c.idx = t, x, len(t.active)
	c.lastVisit, c.born = n, n
	c.lateness = t.lateness.Load()
	if b := t.began.Load(); b != 0 && b < n {
		c.hist.add(b, 0, 0, 0, 0)
	}
	t.active = append(t.active, c)
	x.ctrl = c
	return c
}

// activated reads the peers of new controllers and tunes them at n: from
// the tree's exchange if it has one, else they wait for the next Sync.
func (t *Tree) activated(cs []*Controller, n int64) {
	if len(cs) == 0 {
		return
	}
	ex := t.exchange()
	var reps []Report
	for _, c := range cs {
		if ex != nil {
			reps = ex.View(c.name, reps[:0])
		}
		c.mu.Lock()
		if ex != nil {
			c.syncLocked(n, reps)
			c.synced = n
		} else {
			c.tuneLocked(n, false)
		}
		c.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		if c.idx < 0 {
			continue
		}
		if ex == nil && !c.pending {
			c.pending = true
			t.pending = append(t.pending, c)
		}
		t.schedule(c)
	}
}

// orphan detaches the controller of a deleted budget: it is no longer
// visited nor reported; its lanes close at their sources' next Refresh.
// Called under t.mu.
func (t *Tree) orphan(x *def) {
	if c := x.ctrl; c != nil {
		t.deactivate(c)
	}
}

// deactivate removes c from the active controllers. Called under t.mu.
func (t *Tree) deactivate(c *Controller) {
	last := t.active[len(t.active)-1]
	t.active[c.idx], last.idx = last, c.idx
	t.active = t.active[:len(t.active)-1]
	c.idx = -1
	if c.def != nil {
		c.def.ctrl = nil
		c.def = nil
	}
}
