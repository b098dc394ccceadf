package sim

import (
	"container/heap"
	"math"
	"math/rand/v2"
)

// Reward delay distributions (RewardSpec.Distribution).
const (
	delayFixed       = "fixed"
	delayExponential = "exponential"
	delayLognormal   = "lognormal"
)

// draw returns the delay of one reward, in nanoseconds: Delay itself, or a
// draw of the distribution whose mean is Delay.
func (r *RewardSpec) draw(rng *rand.Rand) int64 {
	mean := float64(r.Delay)
	switch r.Distribution {
	case delayExponential:
		return int64(mean * rng.ExpFloat64())
	case delayLognormal:
		// mean = exp(mu + sigma²/2): a long tail for a large sigma
		s := r.sigma()
		return int64(mean * math.Exp(s*rng.NormFloat64()-s*s/2))
	}
	return int64(r.Delay)
}

func (r *RewardSpec) sigma() float64 {
	if r.Sigma > 0 {
		return r.Sigma
	}
	return 1
}

// reward is one reward to come: for budget b, at instant at.
type reward struct {
	at  int64
	b   int
	seq uint64 // ties broken by the order they were drawn in
}

// rewardQueue holds rewards to come, soonest first.
type rewardQueue struct {
	h   rewardHeap
	seq uint64
}

func (q *rewardQueue) push(at int64, b int) {
	q.seq++
	heap.Push(&q.h, reward{at: at, b: b, seq: q.seq})
}

// deliver counts in the ground truth every reward due before until, in
// the order they come, and hands each to to.
func (q *rewardQueue) deliver(bs []*budget, until int64, to func(reward)) {
	for len(q.h) > 0 && q.h[0].at < until {
		r := heap.Pop(&q.h).(reward)
		bs[r.b].rewardAt(r.at)
		to(r)
	}
}

type rewardHeap []reward

func (h rewardHeap) Len() int { return len(h) }
func (h rewardHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h rewardHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rewardHeap) Push(x any)   { *h = append(*h, x.(reward)) }
func (h *rewardHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
