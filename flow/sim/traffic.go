package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/throttler/throttler/flow"
)

// profile is a rate that changes by steps and, with jitter, by a random
// factor drawn every second.
type profile struct {
	rate    float64
	steps   []Step
	jitter  float64
	rng     *rand.Rand
	factor  float64
	jitterS int64 // second the factor was drawn for
}

func newProfile(rate float64, steps []Step, jitter float64, rng *rand.Rand) profile {
	return profile{rate: rate, steps: steps, jitter: jitter, rng: rng, jitterS: -1}
}

// at returns the rate at t.
func (p *profile) at(t int64) float64 {
	r := p.rate
	off := time.Duration(t - epoch.UnixNano())
	for _, s := range p.steps {
		if off >= s.At.D() {
			r = s.Rate
		}
	}
	if p.jitter > 0 {
		if sec := int64(off / time.Second); sec != p.jitterS {
			p.jitterS = sec
			p.factor = math.Max(0, 1+p.jitter*p.rng.NormFloat64())
		}
		r *= p.factor
	}
	return r
}

// score draws the score of an event of b at te.
func (b *budget) score(rng *rand.Rand, te int64) float64 {
	var s float64
	switch b.dist {
	case "uniform":
		s = rng.Float64()
	case "normal":
		s = rng.NormFloat64()
	case "exponential":
		s = rng.ExpFloat64()
	}
	off := Duration(te - epoch.UnixNano())
	for i := len(b.drift) - 1; i >= 0; i-- {
		if d := b.drift[i]; off >= d.At {
			return s*d.scale() + d.Shift
		}
	}
	return s
}

func (d Drift) scale() float64 {
	if d.Scale == 0 {
		return 1
	}
	return d.Scale
}

// stream is the share of a traffic source's events that one budget
// receives directly.
type stream struct {
	b     *budget
	share float64
	carry float64 // events due but not offered yet (a fraction, or a backlog)
}

func streamsOf(bs []*budget) []stream {
	var out []stream
	for _, b := range bs {
		if *b.spec.Share > 0 {
			out = append(out, stream{b: b, share: *b.spec.Share})
		}
	}
	return out
}

// decide offers one event of b to lane, stamped now, and returns whether
// it passed.
func decide(lane *flow.Lane, now time.Time, score float64) bool {
	return lane.Decide(now, score).Pass
}
