package sim

import "math"

// The paced offline optimum of a scored window budget: the best precision
// a selection of its offered events can reach when the whole window is
// known in advance, as long as it stays as close to the ideal course as
// the run did. Formally, with the timeline's rows at r_1 < … < r_K (every
// sync interval, and the end of the run), D the run's maximum deviation
// (as a share of the target T, over the same rows), and P_k the number of
// selected events offered before r_k:
//
//	maximise  |selected ∩ good| / T
//	such that |P_k − ideal(r_k)| ≤ D·T at every row k, and P_K = T,
//
// where good are the events the run's precision counts as good (a score at
// least the T-th highest offered). Only how many events each row's bin
// contributes matters to the constraints, and within a bin the good ones
// go first, so the problem is over the bins' counts: a dynamic programme
// over P_k, each step a maximum over a sliding window (the gain of d
// events from a bin with g good ones is min(g, d), concave), O(K·T).
//
// Greedy by score under the upper caps alone (P_k ≤ ideal(r_k) + D·T) is
// optimal for those nested prefix constraints, but may fall more than D·T
// behind the course where the good events come late; the lower bound is
// what "as close to the ideal course as the run" asks too.

// optimum returns the paced offline optimum's precision for a budget whose
// offered events are counted by bin (bins[k]: all, good[k]: good ones,
// k = 1..K for the rows), ideal[k] the ideal course at row k, target T and
// deviation dev (a share of T). It returns NaN when no selection fits.
func optimum(bins, good []int, ideal []float64, target, dev float64) float64 {
	return paced(bins, good, ideal, target, dev, dev)
}

// paced is optimum with the course's slack apart: below, and above it (as
// shares of the target).
func paced(bins, good []int, ideal []float64, target, below, above float64) float64 {
	total := 0
	for _, n := range bins {
		total += n
	}
	want := int(math.Round(target))
	if want <= 0 || want > total {
		return math.NaN()
	}
	under, over := below*target, above*target
	hiMax := want
	for k := range ideal {
		hiMax = max(hiMax, int(math.Floor(ideal[k]+over+1e-9)))
	}
	top := min(hiMax, total)
	const none = math.MinInt32
	v := make([]int32, top+1)
	next := make([]int32, top+1)
	for p := range v {
		v[p] = none
	}
	v[0] = 0
	// deques of prefix counts, by decreasing value, from their heads
	qa, qb := make([]int, 0, top+1), make([]int, 0, top+1)
	for k := range bins {
		n, g := bins[k], good[k]
		lo := 0
		if !math.IsInf(under, 1) {
			lo = max(0, int(math.Ceil(ideal[k]-under-1e-9)))
		}
		hi := min(top, int(math.Floor(ideal[k]+over+1e-9)))
		if k == len(bins)-1 {
			lo, hi = max(lo, want), min(hi, want)
		}
		qa, qb = qa[:0], qb[:0]
		ha, hb := 0, 0
		// a: V(p') − p' over p' in [p−g, p] (d ≤ g: every event good);
		// b: V(p') over p' in [p−n, p−g−1] (d > g: g good ones).
		for p := 0; p <= top; p++ {
			if v[p] != none {
				for len(qa) > ha && v[qa[len(qa)-1]]-int32(qa[len(qa)-1]) <= v[p]-int32(p) {
					qa = qa[:len(qa)-1]
				}
				qa = append(qa, p)
			}
			for len(qa) > ha && qa[ha] < p-g {
				ha++
			}
			if q := p - g - 1; q >= 0 && v[q] != none {
				for len(qb) > hb && v[qb[len(qb)-1]] <= v[q] {
					qb = qb[:len(qb)-1]
				}
				qb = append(qb, q)
			}
			for len(qb) > hb && qb[hb] < p-n {
				hb++
			}
			best := int32(none)
			if len(qa) > ha {
				best = v[qa[ha]] - int32(qa[ha]) + int32(p)
			}
			if len(qb) > hb {
				best = max(best, v[qb[hb]]+int32(g))
			}
			if p < lo || p > hi {
				best = none
			}
			next[p] = best
		}
		v, next = next, v
	}
	if v[want] == none {
		return math.NaN()
	}
	return float64(v[want]) / float64(want)
}

// optimumOf returns the paced offline optimum's precision of a scored
// window budget whose window ends within the run (nil otherwise, or when
// no selection fits), from the events it was offered.
func (w *world) optimumOf(b *budget) *float64 {
	if !b.scored || b.spec.Period > 0 || b.spec.Reward != nil || len(b.offScores) == 0 ||
		b.end > epoch.UnixNano()+w.duration {
		return nil // not a window that ends within the run
	}
	k := int(b.spec.Target)
	if k <= 0 || k > len(b.offScores) {
		return nil
	}
	cut := kthLargest(append([]float32(nil), b.offScores...), k)
	e0 := epoch.UnixNano()
	rows := int((w.duration + w.syncEvery - 1) / w.syncEvery)
	bins, good, ideal := make([]int, rows), make([]int, rows), make([]float64, rows)
	for i, s := range b.offScores {
		r := min(int(b.offRows[i]), rows) - 1
		bins[r]++
		if s >= cut {
			good[r]++
		}
	}
	for r := range ideal {
		ideal[r] = b.ideal(min(e0+int64(r+1)*w.syncEvery, e0+w.duration))
	}
	p := optimum(bins, good, ideal, b.spec.Target, b.maxDev)
	if math.IsNaN(p) {
		return nil
	}
	return &p
}
