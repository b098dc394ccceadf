package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/throttler/throttler/flow"
)

// node is one simulated worker. In node mode it is also one source of
// traffic, its own, which dies with it.
type node struct {
	spec    Node
	idx     int
	start   int64
	stop    int64
	phase   int64
	alive   bool
	tree    *flow.Tree
	src     *flow.Source
	lanes   []*flow.Lane // by budget index (node mode)
	traffic profile
	streams []stream
	rewards rewardQueue
	rng     *rand.Rand
	reports []flow.Report
	// idle: the reports of a node that left (node mode), its source idle
	// from then on
	idle []flow.Report
}

func newNode(w *world, i int, spec Node) *node {
	e0 := epoch.UnixNano()
	n := &node{spec: spec, idx: i, start: e0, stop: math.MaxInt64,
		rng: rand.New(rand.NewPCG(w.sc.Seed, uint64(i)+1))}
	n.traffic = newProfile(spec.Rate, spec.Steps, spec.Jitter, n.rng)
	if spec.Start != nil {
		n.start = e0 + int64(*spec.Start)
	}
	if spec.Stop != nil {
		n.stop = e0 + int64(*spec.Stop)
	}
	if spec.Crash != nil {
		n.stop = e0 + int64(*spec.Crash)
	}
	n.phase = (w.syncEvery * int64(i) / int64(len(w.sc.Nodes))) / w.commitEvery * w.commitEvery
	return n
}

// join starts the node's tree at t, knowing the group's size, as a worker
// knows its share of the partitions when they are assigned. The tree reads
// the exchange when it creates a controller (a budget's first lane on the
// node, after a partition moved in or came back), as a worker's does.
func (n *node) join(w *world, t int64, members int) error {
	tree, err := flow.NewTree(w.fbs, append(w.opts, flow.PriorShare(1/float64(members)), flow.Peers(w.ex))...)
	if err != nil {
		return fmt.Errorf("budgets: %w", err)
	}
	n.tree = tree
	n.phase = (n.phase + t - epoch.UnixNano()) % w.syncEvery / w.commitEvery * w.commitEvery
	return nil
}

// syncOrTune publishes and syncs at the node's sync instants, and tunes
// otherwise.
func (n *node) syncOrTune(w *world, t int64) {
	now := w.clock(t)
	if (t-epoch.UnixNano()-n.phase)%w.syncEvery == 0 {
		n.reports = n.tree.Reports(now, n.reports[:0])
		n.reports = w.releasedReports(n, now, n.reports)
		_ = w.ex.Publish(n.reports)
		n.tree.Sync(now, w.ex)
	} else {
		n.tree.Tune(now)
	}
}

// runNodes simulates node mode: every node is a source of its own traffic.
func (w *world) runNodes(res *Result) error {
	e0 := epoch.UnixNano()
	for t := e0; t < e0+w.duration; t += w.step {
		if err := w.nodeMembership(t); err != nil {
			return err
		}
		w.ex.advance(t)
		w.tick(res, t)
		for _, n := range w.nodes {
			n.deliverRewards(w, t+w.step)
			if !n.alive {
				n.vouch(w, t)
				continue
			}
			n.syncOrTune(w, t)
			n.run(w, t)
		}
	}
	return nil
}

// nodeMembership starts and stops nodes at t.
func (w *world) nodeMembership(t int64) error {
	changed, members := false, 0
	for _, n := range w.nodes {
		if t >= n.start && t < n.stop {
			members++
		}
	}
	for _, n := range w.nodes {
		should := t >= n.start && t < n.stop
		if should == n.alive {
			continue
		}
		changed, n.alive = true, should
		if !should {
			if n.spec.Crash == nil {
				n.leave(w, t)
			}
			continue
		}
		if err := n.join(w, t, members); err != nil {
			return err
		}
		src, err := n.tree.Open("node/"+n.spec.Name, w.clock(t), nil)
		if err != nil {
			return err
		}
		n.src = src
		n.lanes = make([]*flow.Lane, len(w.bs))
		for i, b := range w.bs {
			n.lanes[i] = src.Lane(b.spec.Name)
		}
		w.ex.advance(t)
		n.tree.Sync(w.clock(t), w.ex)
	}
	if changed {
		alive := 0
		for _, n := range w.nodes {
			if n.alive {
				alive++
			}
		}
		for _, n := range w.nodes {
			if n.alive {
				n.tree.SetShare(1 / float64(alive))
			}
		}
	}
	return nil
}

// leave publishes the counters of a node that leaves at t, as a worker
// that leaves commits its counters on its way out: its source is idle from
// then on.
func (n *node) leave(w *world, t int64) {
	n.idle = n.tree.Reports(w.clock(t), nil)
	_ = w.ex.Publish(n.idle)
}

// vouch republishes, at the sync instants of a node that left, the
// unchanged counters of its idle source, as the owner of an idle
// partition writes a heartbeat every sync interval.
func (n *node) vouch(w *world, t int64) {
	if len(n.idle) == 0 || (t-epoch.UnixNano()-n.phase)%w.syncEvery != 0 {
		return
	}
	for i := range n.idle {
		n.idle[i].At = w.clock(t)
	}
	_ = w.ex.Publish(n.idle)
}

// run offers the node's events of one step.
func (n *node) run(w *world, t int64) {
	rate := n.traffic.at(t)
	dt := float64(w.step) / 1e9
	for i := range n.streams {
		s := &n.streams[i]
		x := s.carry + rate*s.share*dt
		k := int(x)
		s.carry = x - float64(k)
		if k == 0 {
			continue
		}
		lane := n.lanes[s.b.idx]
		gap := w.step / int64(k)
		for j := 0; j < k; j++ {
			te := t + gap*int64(j) + gap/2
			score := s.b.score(n.rng, te)
			s.b.offer(w.bs, te, score)
			if decide(lane, w.stamp(t, te), score) {
				s.b.pass(w.bs, te, score, n.rng, func(j int) {
					n.rewards.push(te+w.bs[j].spec.Reward.draw(n.rng), j)
				})
			}
		}
	}
}

// deliverRewards hands the rewards due before until to the node's lanes, or,
// when the node is gone, to the first live node (its reward partitions have
// moved there).
func (n *node) deliverRewards(w *world, until int64) {
	n.rewards.deliver(w.bs, until, func(r reward) {
		to := n
		if !n.alive {
			to = nil
			for _, m := range w.nodes {
				if m.alive {
					to = m
					break
				}
			}
		}
		if to != nil {
			to.lanes[r.b].Reward(w.clock(r.at), 1)
		}
	})
}
