package flow

import (
	"fmt"
	"time"
)

// Source is one source's (one partition's) set of lanes on this node, one
// per budget that had an event there since the lane last opened. Lanes
// open on demand (Get, Lane), are released when idle (Release) and follow
// budget changes (Refresh); the source lists the lanes whose counters
// changed, for publication (Changed).
//
// Like its lanes, a Source belongs to one goroutine: its methods must not
// be called concurrently with each other or with its lanes' (another
// goroutine may call them while the owner is parked, if the hand-over
// orders memory, e.g. a WaitGroup). Sources come from Tree.Open; there is
// no useful zero value.
type Source struct {
	t       *Tree
	name    string
	restore func(budget string) (Report, bool)
	now     int64  // the instant Lane opens at
	version uint64 // the tree version the lanes follow
	lanes   map[string]*Lane
	list    []*Lane // the open lanes (Lane.idx)
	stale   []*Lane // replaced by a lane of a newer definition: closed at Refresh
	dirty   []*Lane // counters changed since Changed listed them
	pending []*Lane // listed, not yet published
	act     []*Controller
	scratch []*Lane
	closed  bool
}

// Open starts counting a source on this node. restore, if not nil, returns
// the counters a budget had for this source when they were last made
// durable (committed), or false for a budget it has none of: each lane is
// restored through it when it opens, so a partition that moves between
// nodes, or a lane released and opened again, continues exactly where it
// was (cumulative counters never go backwards). restore must answer from
// the latest durable state, not a copy taken at Open, and must not call
// the tree. What it holds for budgets the tree does not have is ignored.
// Open costs O(1): no lane opens until the source needs it.
func (t *Tree) Open(source string, now time.Time, restore func(budget string) (Report, bool)) (*Source, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sources[source] != nil {
		return nil, fmt.Errorf("%w: %q", ErrSourceOpen, source)
	}
	s := &Source{t: t, name: source, restore: restore, now: now.UnixNano(), version: t.defs.version, lanes: map[string]*Lane{}}
	t.sources[source] = s
	return s, nil
}

// Close stops counting a source: every lane closes, and Close returns the
// final reports of those whose budget is still in the tree. The source
// must not be used after.
func (t *Tree) Close(s *Source, now time.Time) []Report {
	return t.close(s, now, nil)
}

// Lose stops counting a source whose ownership was lost rather than handed
// over (the node's group session expired, or it was fenced): another node
// may have owned the source since, and what the lanes counted since the
// last commit is void. Every lane closes, and each controller takes the
// exchange's latest report of the source for it (the committed counters,
// and whatever another owner published since), read at once: the lanes'
// own counts, which Close leaves in their place, would stand for the
// source until a report newer than the close came, and after a node that
// was frozen wakes up they miss everything the next owner passed. A budget
// the exchange has no report of the source for keeps the lane's, as with
// Close. The source must not be used after.
func (t *Tree) Lose(s *Source, now time.Time) {
	ex := t.exchange()
	if ex == nil {
		t.close(s, now, nil)
		return
	}
	latest := make(map[*Lane]Report, len(s.list))
	one, _ := ex.(ReportLookup)
	var buf []Report
	for _, l := range s.list {
		if one != nil {
			if r, ok := one.Report(l.c.name, s.name); ok {
				latest[l] = r
			}
			continue
		}
		buf = ex.View(l.c.name, buf[:0])
		for _, r := range buf {
			if r.Source == s.name {
				latest[l] = r
				break
			}
		}
	}
	t.close(s, now, latest)
}

// close closes s's lanes; latest holds, by lane, the report that stands
// for the source after (none: the lane's own).
func (t *Tree) close(s *Source, now time.Time, latest map[*Lane]Report) []Report {
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Report, 0, len(s.list))
	for _, l := range s.list {
		var rep *Report
		if r, ok := latest[l]; ok {
			rep = &r
		}
		r := s.closeLane(l, n, rep)
		if l.c.idx >= 0 {
			out = append(out, r)
		}
	}
	for _, l := range s.stale {
		s.closeLane(l, n, nil)
	}
	s.list, s.stale, s.dirty, s.pending = nil, nil, nil, nil
	clear(s.lanes)
	s.closed = true
	delete(t.sources, s.name)
	return out
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Len returns the number of open lanes.
func (s *Source) Len() int { return len(s.list) }

// Get returns the lane of a budget, opening it at now if the source has
// none open (restored through Open's restore; its controller is created
// if this node had none, see Tree), or nil when the tree has no such
// budget. Finding an open lane does not allocate, nor does answering nil.
// A lane opened while the source is behind the tree's version follows the
// newest definition; call Refresh between batches as usual.
func (s *Source) Get(budget []byte, now time.Time) *Lane {
	s.now = now.UnixNano()
	if l := s.lanes[string(budget)]; l != nil {
		return l
	}
	t := s.t
	t.mu.RLock()
	x := t.defs.byName[string(budget)]
	var name string
	if x != nil {
		name = x.b.Name
	}
	t.mu.RUnlock()
	if x == nil {
		return nil
	}
	return s.open(name, s.now)
}

// Lane is Get for a budget named by a string, opening at the instant of
// the source's latest Open, Get, Refresh or Release.
func (s *Source) Lane(budget string) *Lane {
	if l := s.lanes[budget]; l != nil {
		return l
	}
	return s.open(budget, s.now)
}

// Peek returns the open lane of a budget, or nil; it never opens one.
func (s *Source) Peek(budget string) *Lane { return s.lanes[budget] }

func (s *Source) open(name string, n int64) *Lane {
	t := s.t
	t.mu.Lock()
	x := t.defs.get(name)
	if x == nil || s.closed {
		t.mu.Unlock()
		return nil
	}
	l := s.chain(x, n)
	t.mu.Unlock()
	t.activated(s.act, n)
	clear(s.act)
	s.act = s.act[:0]
	return l
}

// chain returns the current lane of budget x, opening it, and its
// ancestors' lanes, where needed. Called under the tree's mutex.
func (s *Source) chain(x *def, n int64) *Lane {
	old := s.lanes[x.b.Name]
	if old != nil && x.ctrl != nil && old.c == x.ctrl {
		return old
	}
	var parent *Lane
	if x.parent != nil {
		parent = s.chain(x.parent, n)
	}
	c := x.ctrl
	if c == nil {
		c = s.t.activate(x, n)
		s.act = append(s.act, c)
	}
	l := c.open(s.name, n, restored(s.restore, x.b.Name))
	l.src = s
	l.link(parent)
	if old != nil { // of a deleted or replaced definition
		s.unlist(old)
		s.stale = append(s.stale, old)
	}
	s.lanes[x.b.Name] = l
	l.idx = len(s.list)
	s.list = append(s.list, l)
	return l
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

// link points the lane at its parent's lane of the same source.
func (l *Lane) link(p *Lane) {
	if l.parent != nil {
		l.parent.kids--
	}
	l.parent = p
	if p != nil {
		p.kids++
	}
}

// unlist removes an open lane from the source's list (not from its map).
func (s *Source) unlist(l *Lane) {
	last := s.list[len(s.list)-1]
	s.list[l.idx], last.idx = last, l.idx
	s.list[len(s.list)-1] = nil
	s.list = s.list[:len(s.list)-1]
	l.idx = -1
}

// drop removes an open lane from the source and closes it. Called under
// the tree's mutex.
func (s *Source) drop(l *Lane, n int64) {
	if s.lanes[l.c.name] == l {
		delete(s.lanes, l.c.name)
	}
	s.unlist(l)
	s.closeLane(l, n, nil)
}

// closeLane closes a lane; a controller left without lanes is dropped
// DropAfter later. Called under the tree's mutex.
func (s *Source) closeLane(l *Lane, n int64, latest *Report) Report {
	l.link(nil)
	r, empty := l.c.close(l, n, latest)
	if empty && l.c.idx >= 0 {
		s.t.schedule(l.c)
	}
	return r
}

// Refresh brings the source's lanes in line with the tree after Apply or
// Update: lanes of deleted budgets close, lanes of changed budgets adopt
// the new definition (and their new parent: its lane opens if needed),
// and lanes of budgets deleted and added again close (the new budget's
// lane opens on its next event). It costs one atomic load when nothing
// changed, else O(changes since the source's last Refresh × depth) (or
// O(open lanes) when the source is more than a few thousand changes
// behind), and reports whether the tree changed. restore, if not nil,
// replaces the one given to Open. Call it from the source's goroutine,
// between decisions (e.g. at the start of each batch); Lane pointers taken
// before a Refresh that returned true may be stale.
func (s *Source) Refresh(now time.Time, restore func(budget string) (Report, bool)) bool {
	s.now = now.UnixNano()
	if restore != nil {
		s.restore = restore
	}
	t := s.t
	if t.version.Load() == s.version || s.closed {
		return false
	}
	n := s.now
	t.mu.Lock()
	if log, ok := t.defs.since(s.version); ok {
		for _, e := range log {
			if l := s.lanes[e.name]; l != nil {
				s.follow(l, n)
			}
		}
	} else {
		s.scratch = append(s.scratch[:0], s.list...)
		for _, l := range s.scratch {
			if !l.closed {
				s.follow(l, n)
			}
		}
		clear(s.scratch)
	}
	for _, l := range s.stale {
		s.closeLane(l, n, nil)
	}
	clear(s.stale)
	s.stale = s.stale[:0]
	s.version = t.defs.version
	t.mu.Unlock()
	t.activated(s.act, n)
	clear(s.act)
	s.act = s.act[:0]
	return true
}

// follow brings one open lane in line with its budget's definition.
// Called under the tree's mutex.
func (s *Source) follow(l *Lane, n int64) {
	x := s.t.defs.get(l.c.name)
	if x == nil || x.ctrl != l.c {
		s.drop(l, n)
		return
	}
	if l.c.adapt(l, n) && !l.dirty {
		s.changed(l) // its period counts may have moved
	}
	var p *Lane
	if x.parent != nil {
		p = s.chain(x.parent, n)
	}
	if p != l.parent {
		l.link(p)
	}
}
