package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/throttler/throttler/flow"
)

// partition is a source of traffic in partition mode: it belongs to the
// cluster, not to a node, and moves between nodes.
type partition struct {
	idx     int
	name    string
	traffic profile
	rng     *rand.Rand
	streams []stream // carry: events produced and not read yet
	owner   *node    // nil while the partition waits for an owner
	next    *node    // the owner it waits for (nil: the least loaded)
	resume  int64    // the instant it may be assigned again
	lanes   []*flow.Lane
	src     *flow.Source
	// committed holds the lanes' counters at the last commit, by budget:
	// what the next owner restores.
	committed map[string]flow.Report
	pending   []decision // decisions since the last commit
	rewards   rewardQueue
	held      []reward // rewards that came while the partition had no owner
}

// decision is one event decided and not committed yet.
type decision struct {
	te     int64
	stream int
	score  float64
	pass   bool
	p      *partition
}

func (w *world) newPartitions() {
	spec := w.sc.Partitions
	weights := make([]float64, spec.Count)
	var sum float64
	for i := range weights {
		weights[i] = math.Pow(float64(i+1), -spec.Skew)
		sum += weights[i]
	}
	for i := range weights {
		f := weights[i] / sum
		steps := make([]Step, len(spec.Steps))
		for j, s := range spec.Steps {
			steps[j] = Step{At: s.At, Rate: s.Rate * f}
		}
		p := &partition{idx: i, name: "p/" + strconv.Itoa(i), committed: map[string]flow.Report{},
			rng: rand.New(rand.NewPCG(w.sc.Seed, 1<<32+uint64(i))), streams: streamsOf(w.bs)}
		p.traffic = newProfile(spec.Rate*f, steps, spec.Jitter, p.rng)
		w.parts = append(w.parts, p)
	}
}

// runPartitions simulates partition mode.
func (w *world) runPartitions(res *Result) error {
	w.newPartitions()
	e0 := epoch.UnixNano()
	ci := w.commitEvery
	for t := e0; t < e0+w.duration; t += w.step {
		if err := w.partitionEvents(t); err != nil {
			return err
		}
		if err := w.assign(t); err != nil {
			return err
		}
		w.ex.advance(t)
		if (t-e0)%ci == 0 {
			w.commit(t)
		}
		w.tick(res, t)
		for _, p := range w.parts {
			p.deliverRewards(w, t+w.step)
		}
		for _, n := range w.nodes {
			if n.alive {
				n.syncOrTune(w, t)
			}
		}
		for _, p := range w.parts {
			p.run(w, t)
		}
	}
	w.commit(e0 + w.duration)
	return nil
}

// partitionEvents applies what happens to the group at t: nodes that
// join, leave or crash, broker restarts that begin.
func (w *world) partitionEvents(t int64) error {
	spec := w.sc.Partitions
	for _, n := range w.nodes {
		switch {
		case !n.alive && t >= n.start && t < n.stop:
			if err := w.joinPartitions(n, t); err != nil {
				return err
			}
		case n.alive && t >= n.stop:
			n.alive = false
			for _, p := range w.parts {
				if p.owner != n {
					continue
				}
				if n.spec.Crash != nil {
					p.abort()
					p.hold(nil, t+int64(spec.SessionTimeout))
				} else {
					w.commitPartition(p, t)
					p.release(w, t, nil, t+int64(spec.Rebalance))
				}
			}
			n.tree = nil
		}
	}
	for _, r := range w.sc.Restarts {
		if t != epoch.UnixNano()+int64(r.From) {
			continue
		}
		for _, p := range w.parts {
			if p.owner != nil {
				owner := p.owner
				p.abort()
				p.release(w, t, owner, epoch.UnixNano()+int64(r.To)+int64(spec.Rebalance))
			} else {
				p.resume = max(p.resume, epoch.UnixNano()+int64(r.To)+int64(spec.Rebalance))
			}
		}
	}
	w.shares()
	return nil
}

// joinPartitions starts node n at t and moves to it, after the rebalance
// pause, partitions of the most loaded nodes.
func (w *world) joinPartitions(n *node, t int64) error {
	members := 1
	for _, m := range w.nodes {
		if m.alive {
			members++
		}
	}
	if err := n.join(w, t, members); err != nil {
		return err
	}
	n.alive = true
	quota := len(w.parts) / members
	for taken := 0; taken < quota; taken++ {
		var from *node
		most := 0
		for _, m := range w.nodes {
			if k := w.owned(m); m.alive && m != n && k > most {
				from, most = m, k
			}
		}
		if from == nil || most <= quota {
			break
		}
		for _, p := range w.parts {
			if p.owner == from {
				w.commitPartition(p, t)
				p.release(w, t, n, t+int64(w.sc.Partitions.Rebalance))
				break
			}
		}
	}
	w.ex.advance(t)
	n.tree.Sync(w.clock(t), w.ex)
	return nil
}

// owned counts the partitions a node owns or is about to own.
func (w *world) owned(n *node) int {
	k := 0
	for _, p := range w.parts {
		if p.owner == n || p.owner == nil && p.next == n {
			k++
		}
	}
	return k
}

// assign gives the partitions that wait and may resume at t an owner: the
// one they wait for if it is alive, else the least loaded live node.
func (w *world) assign(t int64) error {
	for _, p := range w.parts {
		if p.owner != nil || t < p.resume {
			continue
		}
		to := p.next
		if to == nil || !to.alive {
			to = nil
			for _, m := range w.nodes {
				if m.alive && (to == nil || w.owned(m) < w.owned(to)) {
					to = m
				}
			}
		}
		if to == nil {
			continue
		}
		if err := p.open(w, to, t); err != nil {
			return err
		}
	}
	w.shares()
	return nil
}

// shares tells every live node its share of the partitions.
func (w *world) shares() {
	for _, n := range w.nodes {
		if k := w.owned(n); n.alive && k > 0 {
			n.tree.SetShare(float64(k) / float64(len(w.parts)))
		}
	}
}

// open makes n the partition's owner at t, restoring its lanes from the
// last commit.
func (p *partition) open(w *world, n *node, t int64) error {
	now := w.clock(t)
	src, err := n.tree.Open(p.name, now, func(b string) (flow.Report, bool) {
		r, ok := p.committed[b]
		return r, ok
	})
	if err != nil {
		return err
	}
	p.owner, p.next, p.src = n, nil, src
	if w.sc.Partitions.LaneIdle == 0 {
		p.lanes = make([]*flow.Lane, len(w.bs))
		for i, b := range w.bs {
			p.lanes[i] = src.Lane(b.spec.Name)
		}
	}
	// With lanes released when idle, a lane opens at its budget's first
	// event, as the worker's do (Source.Get): a partition assigned but
	// not read yet publishes nothing.
	for _, r := range p.held {
		src.Lane(w.bs[r.b].spec.Name).Reward(now, 1)
	}
	p.held = p.held[:0]
	return nil
}

// release closes the partition on its owner at t (after a commit or an
// abort); it waits until resume for next.
func (p *partition) release(w *world, t int64, next *node, resume int64) {
	if p.owner != nil && p.owner.tree != nil && p.src != nil {
		p.owner.tree.Close(p.src, w.clock(t))
	}
	p.hold(next, resume)
}

// hold leaves the partition without an owner until resume.
func (p *partition) hold(next *node, resume int64) {
	p.owner, p.src, p.lanes, p.next, p.resume = nil, nil, nil, next, resume
}

// abort drops the decisions since the last commit: their events will be
// read again.
func (p *partition) abort() {
	for _, d := range p.pending {
		p.streams[d.stream].carry++
	}
	p.pending = p.pending[:0]
}

// commit commits every owned partition at t, its decisions counted in the
// ground truth in the order they were made.
func (w *world) commit(t int64) {
	var all []decision
	for _, p := range w.parts {
		all = append(all, p.pending...)
		p.pending = p.pending[:0]
	}
	slices.SortStableFunc(all, func(a, b decision) int { return cmp.Compare(a.te, b.te) })
	w.fold(all)
	now := w.clock(t)
	for _, n := range w.nodes {
		if !n.alive {
			continue
		}
		n.reports = n.tree.Reports(now, n.reports[:0])
		for _, r := range n.reports {
			if p := w.partByName(r.Source); p != nil && p.owner == n {
				p.committed[r.Budget] = r
			}
		}
	}
	for _, p := range w.parts {
		if p.owner != nil {
			p.releaseIdle(w, now)
		}
	}
}

// commitPartition commits one partition ahead of the others (it moves).
func (w *world) commitPartition(p *partition, t int64) {
	w.fold(p.pending)
	p.pending = p.pending[:0]
	if p.owner == nil || p.owner.tree == nil {
		return
	}
	for _, r := range p.owner.tree.Reports(w.clock(t), nil) {
		if r.Source == p.name {
			p.committed[r.Budget] = r
		}
	}
}

// fold counts committed decisions in the ground truth, and draws the
// rewards of their passes.
func (w *world) fold(ds []decision) {
	for _, d := range ds {
		b := d.p.streams[d.stream].b
		b.offer(w.bs, d.te, d.score)
		if d.pass {
			b.pass(w.bs, d.te, d.score, d.p.rng, func(j int) {
				d.p.rewards.push(d.te+w.bs[j].spec.Reward.draw(d.p.rng), j)
			})
		}
	}
}

func (w *world) partByName(name string) *partition {
	i, err := strconv.Atoi(name[len("p/"):])
	if err != nil || i < 0 || i >= len(w.parts) || name[:2] != "p/" {
		return nil
	}
	return w.parts[i]
}

// deliverRewards counts the rewards due before until and hands them to
// the partition's lanes, or holds them until it has an owner.
func (p *partition) deliverRewards(w *world, until int64) {
	p.rewards.deliver(w.bs, until, func(r reward) {
		if p.owner == nil {
			p.held = append(p.held, r)
			return
		}
		p.lane(w, r.b, r.at).Reward(w.clock(r.at), 1)
	})
}

// releasedReports appends to dst, with lanes released (Partitions.LaneIdle),
// the committed counters of the budgets whose lane n released on the
// partitions it owns, read at now: the worker's stats view shows a
// source's every budget as of the partition's latest commit or heartbeat.
func (w *world) releasedReports(n *node, now time.Time, dst []flow.Report) []flow.Report {
	if w.sc.Partitions == nil || w.sc.Partitions.LaneIdle == 0 {
		return dst
	}
	for _, p := range w.parts {
		if p.owner != n || p.src == nil {
			continue
		}
		for _, b := range w.bs {
			if r, ok := p.committed[b.spec.Name]; ok && p.src.Peek(b.spec.Name) == nil {
				r.At = now
				dst = append(dst, r)
			}
		}
	}
	return dst
}

// lane returns the partition's lane of budget b, opening it at t when
// lanes are released (Partitions.LaneIdle) and b's was.
func (p *partition) lane(w *world, b int, t int64) *flow.Lane {
	if w.sc.Partitions.LaneIdle == 0 {
		return p.lanes[b]
	}
	return p.src.Get(w.bs[b].name, w.clock(t))
}

// releaseIdle publishes the partition's changed counters (committed by
// commit) and releases its lanes idle for Partitions.LaneIdle.
func (p *partition) releaseIdle(w *world, now time.Time) {
	if w.sc.Partitions.LaneIdle == 0 || p.src == nil {
		return
	}
	w.changed = p.src.Changed(now, w.changed[:0])
	p.src.Published()
	p.src.Release(now, time.Duration(w.sc.Partitions.LaneIdle))
}

// run produces the partition's events of the step at t and, when it has
// an owner and does not stall, reads them: those of the step, and a
// backlog at CatchUp times the rate.
func (p *partition) run(w *world, t int64) {
	rate := p.traffic.at(t)
	dt := float64(w.step) / 1e9
	stalled := p.owner != nil && w.stalled(p.owner.spec.Name, t)
	for i := range p.streams {
		s := &p.streams[i]
		due := rate * s.share * dt
		s.carry += due
		if p.owner == nil || stalled {
			continue
		}
		k := int(min(s.carry, math.Ceil(w.sc.Partitions.CatchUp*due)))
		if k <= 0 {
			continue
		}
		s.carry -= float64(k)
		lane := p.lane(w, s.b.idx, t)
		gap := w.step / int64(k)
		for j := 0; j < k; j++ {
			te := t + gap*int64(j) + gap/2
			score := s.b.score(p.rng, te)
			p.pending = append(p.pending, decision{te: te, stream: i, score: score, pass: decide(lane, w.stamp(t, te), score), p: p})
		}
	}
}
