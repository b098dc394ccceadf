package flow

// ownHistory is a ring of the node's own cumulative counts at each tune,
// from which the local rate and the local pass fraction over any recent
// span are read. It holds the last histLen entries; its storage starts
// at histMin entries and doubles as entries come, so that a controller
// that lives for a few visits (a budget seen once on this node) holds a
// few entries, not histLen.
type ownHistory struct {
	e       []histEntry
	n, head int
}

const (
	histLen = 64
	histMin = 4
)

// histEntry is the counts at instant t.
type histEntry struct {
	t  int64
	pt histPoint
}

// histPoint is what the node's lanes offered and passed, what they were
// meant to pass (the working fraction times the events offered), and what
// the wanted cluster pass rate asked of the cluster, all cumulative.
type histPoint struct {
	off, pas, exp, want float64
}

// add records what the lanes offered, passed and were meant to pass, and
// what the cluster was asked to pass, since the last entry.
func (h *ownHistory) add(t int64, off, pas, exp, want float64) {
	var prev histPoint
	last := 0
	if h.n > 0 {
		last = h.idx(h.n - 1)
		prev = h.e[last].pt
	}
	pt := histPoint{prev.off + off, prev.pas + pas, prev.exp + exp, prev.want + want}
	if h.n > 0 && h.e[last].t >= t {
		h.e[last].pt = pt
		return
	}
	if h.n == len(h.e) && len(h.e) < histLen {
		h.grow()
	}
	h.e[h.head] = histEntry{t, pt}
	h.head = (h.head + 1) % len(h.e)
	if h.n < len(h.e) {
		h.n++
	}
}

// grow doubles the ring's storage (histMin to start), oldest entry first.
func (h *ownHistory) grow() {
	e := make([]histEntry, max(2*len(h.e), histMin))
	for k := range h.n {
		e[k] = h.e[h.idx(k)]
	}
	h.e, h.head = e, h.n
}

// idx is the ring index of the k-th oldest entry (0 <= k < n).
func (h *ownHistory) idx(k int) int { return (h.head + len(h.e) - h.n + k) % len(h.e) }

// at interpolates the counts at t (clamped to the ring's span).
func (h *ownHistory) at(t int64) histPoint {
	if h.n == 0 {
		return histPoint{}
	}
	newest := h.idx(h.n - 1)
	if t >= h.e[newest].t {
		return h.e[newest].pt
	}
	for k := h.n - 2; k >= 0; k-- {
		i := h.idx(k)
		if h.e[i].t <= t {
			j := h.idx(k + 1)
			f := float64(t-h.e[i].t) / float64(h.e[j].t-h.e[i].t)
			a, b := h.e[i].pt, h.e[j].pt
			return histPoint{a.off + f*(b.off-a.off), a.pas + f*(b.pas-a.pas), a.exp + f*(b.exp-a.exp), a.want + f*(b.want-a.want)}
		}
	}
	return h.e[h.idx(0)].pt
}

// newest is the instant of the last entry (0 with none).
func (h *ownHistory) newest() int64 {
	if h.n == 0 {
		return 0
	}
	return h.e[h.idx(h.n-1)].t
}

// oldest is the instant of the first entry (0 with none).
func (h *ownHistory) oldest() int64 {
	if h.n == 0 {
		return 0
	}
	return h.e[h.idx(0)].t
}

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
