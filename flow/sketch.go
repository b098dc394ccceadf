package flow

import (
	"math"
	"sync/atomic"
)

// The score sketch is a log-linear histogram over float64 scores: 32
// sub-bins per power of two over 2^-32 ≤ |x| < 2^32 for each sign, one bin
// for the values nearer zero, the extremes clamped into the edge bins. A
// bin index is computed from the bits of the float in a few instructions and
// preserves order, so the hot path adds one count per event (no sort, no
// allocation), and a quantile is a walk over the bins in use followed by a
// linear interpolation inside one bin (bins are ~2% of their value wide).
const (
	sketchSub     = 32 // sub-bins per octave (5 mantissa bits)
	sketchSubBits = 5
	sketchOctaves = 64 // exponents -32..31
	sketchMinExp  = -32
	sketchSide    = sketchSub * sketchOctaves
	sketchZero    = sketchSide // index of the zero bin
	sketchBins    = 2*sketchSide + 1
)

// scoreBin maps a score to its bin; larger scores never map to smaller bins.
// NaN must be filtered by the caller.
func scoreBin(x float64) int {
	u := math.Float64bits(x)
	e := int((u>>52)&0x7ff) - 1023
	if e < sketchMinExp {
		return sketchZero
	}
	var i int
	if e >= sketchMinExp+sketchOctaves {
		i = sketchSide - 1
	} else {
		i = (e-sketchMinExp)<<sketchSubBits | int((u>>(52-sketchSubBits))&(sketchSub-1))
	}
	if u>>63 != 0 {
		return sketchZero - 1 - i
	}
	return sketchZero + 1 + i
}

// binBounds returns the lower and upper score of a bin.
func binBounds(b int) (lo, hi float64) {
	if b == sketchZero {
		m := math.Ldexp(1, sketchMinExp)
		return -m, m
	}
	i, neg := b-sketchZero-1, false
	if b < sketchZero {
		i, neg = sketchZero-1-b, true
	}
	e := i>>sketchSubBits + sketchMinExp
	m := i & (sketchSub - 1)
	lo = math.Ldexp(1+float64(m)/sketchSub, e)
	hi = math.Ldexp(1+float64(m+1)/sketchSub, e)
	if neg {
		return -hi, -lo
	}
	return lo, hi
}

// laneSketch is the per-lane half of the sketch: counts written by the
// lane's goroutine only, read by the controller with atomic loads.
type laneSketch struct {
	counts   [sketchBins]atomic.Uint32
	seen     [sketchBins]uint32 // controller-owned: counts already merged
	min, max atomic.Int32       // range of bins ever touched
}

func newLaneSketch() *laneSketch {
	s := &laneSketch{}
	s.min.Store(sketchBins)
	s.max.Store(-1)
	return s
}

// add counts one score. Single writer: a load and a store suffice.
func (s *laneSketch) add(x float64) {
	b := scoreBin(x)
	c := &s.counts[b]
	c.Store(c.Load() + 1)
	if int32(b) < s.min.Load() {
		s.min.Store(int32(b))
	}
	if int32(b) > s.max.Load() {
		s.max.Store(int32(b))
	}
}

// sketch is the controller's decayed merge of its lanes' sketches.
type sketch struct {
	w        [sketchBins]float64
	total    float64
	min, max int
}

func (s *sketch) init() { s.min, s.max = sketchBins, -1 }

// merge adds what a lane counted since the last merge.
func (s *sketch) merge(l *laneSketch) {
	lo, hi := int(l.min.Load()), int(l.max.Load())
	if hi < lo {
		return
	}
	for b := lo; b <= hi; b++ {
		c := l.counts[b].Load()
		d := c - l.seen[b] // wraps correctly
		if d == 0 {
			continue
		}
		l.seen[b] = c
		s.w[b] += float64(d)
		s.total += float64(d)
	}
	s.min = min(s.min, lo)
	s.max = max(s.max, hi)
}

// decay multiplies every weight by f.
func (s *sketch) decay(f float64) {
	if s.max < s.min || f == 1 {
		return
	}
	for b := s.min; b <= s.max; b++ {
		s.w[b] *= f
	}
	s.total *= f
}

// upper returns the cut c such that a fraction p of the weight lies at or
// above c: +Inf for p ≤ 0 or an empty sketch (nothing known, nothing
// passes), -Inf for p ≥ 1.
func (s *sketch) upper(p float64) float64 {
	if p >= 1 {
		return math.Inf(-1)
	}
	if p <= 0 || s.total <= 0 {
		return math.Inf(1)
	}
	need := p * s.total
	acc := 0.0
	for b := s.max; b >= s.min; b-- {
		w := s.w[b]
		if w <= 0 {
			continue
		}
		if acc+w >= need {
			lo, hi := binBounds(b)
			f := (need - acc) / w // fraction of this bin to take, from the top
			return hi - f*(hi-lo)
		}
		acc += w
	}
	return math.Inf(-1)
}
