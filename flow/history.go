package flow

// ownHistory is a ring of the node's own cumulative counts at each tune,
// from which the local rate and the local pass fraction over any recent
// span are read.
type ownHistory struct {
	t       [histLen]int64
	pt      [histLen]histPoint
	n, head int
}

const histLen = 64

// histPoint is what the node's lanes offered and passed, what they were
// meant to pass (the working fraction times the events offered), and what
// the wanted cluster pass rate asked of the cluster, all cumulative.
type histPoint struct {
	off, pas, exp, want float64
}

// add records what the lanes offered, passed and were meant to pass, and
// what the cluster was asked to pass, since the last entry.
func (h *ownHistory) add(t int64, off, pas, exp, want float64) {
	last := (h.head + histLen - 1) % histLen
	var prev histPoint
	if h.n > 0 {
		prev = h.pt[last]
	}
	pt := histPoint{prev.off + off, prev.pas + pas, prev.exp + exp, prev.want + want}
	if h.n > 0 && h.t[last] >= t {
		h.pt[last] = pt
		return
	}
	h.t[h.head], h.pt[h.head] = t, pt
	h.head = (h.head + 1) % histLen
	if h.n < histLen {
		h.n++
	}
}

// at interpolates the counts at t (clamped to the ring's span).
func (h *ownHistory) at(t int64) histPoint {
	if h.n == 0 {
		return histPoint{}
	}
	newest := (h.head + histLen - 1) % histLen
	if t >= h.t[newest] {
		return h.pt[newest]
	}
	for k := 1; k < h.n; k++ {
		i := (h.head + histLen - 1 - k) % histLen
		if h.t[i] <= t {
			j := (i + 1) % histLen
			f := float64(t-h.t[i]) / float64(h.t[j]-h.t[i])
			a, b := h.pt[i], h.pt[j]
			return histPoint{a.off + f*(b.off-a.off), a.pas + f*(b.pas-a.pas), a.exp + f*(b.exp-a.exp), a.want + f*(b.want-a.want)}
		}
	}
	return h.pt[(h.head+histLen-h.n)%histLen]
}

// newest is the instant of the last entry (0 with none).
func (h *ownHistory) newest() int64 {
	if h.n == 0 {
		return 0
	}
	return h.t[(h.head+histLen-1)%histLen]
}

func (h *ownHistory) oldest() int64 { return h.t[(h.head+histLen-h.n)%histLen] }

// fractionPrior is how many passes the fraction the lanes were meant to
// pass weighs against the passes they made: over a span with many passes
// the fraction passed is exact; over a span where the working fraction
// meant a pass or less, whether the one pass fell inside is chance.
const fractionPrior = 20

// fraction returns the node's pass fraction over [from, to]: what it
// passed, shrunk towards what it was meant to pass when that is few
// passes. false when the lanes offered less than one event.
func (h *ownHistory) fraction(from, to int64) (float64, bool) {
	a, b := h.at(from), h.at(to)
	off, pas, exp := b.off-a.off, b.pas-a.pas, b.exp-a.exp
	if off < 1 {
		return 0, false
	}
	if exp <= 0 {
		return pas / off, true
	}
	return (pas + fractionPrior) / (off * (1 + fractionPrior/exp)), true
}
