package sim

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/throttler/throttler/flow"
)

// lossyExchange is a flow.Exchange in virtual time: a publication becomes
// visible delay after it was made, or never (with probability loss, or
// when it is made during an outage). During an outage nothing new becomes
// visible either: readers keep the view they had.
type lossyExchange struct {
	delay   int64
	loss    float64
	rng     *rand.Rand
	now     int64
	outages [][2]int64 // [from, to) in Unix nanoseconds
	pending []pending  // in publication order, so in visibility order
	latest  map[string]map[string]flow.Report
	records int
}

type pending struct {
	visible int64
	r       flow.Report
}

func newLossyExchange(delay int64, loss float64, seed uint64, outages [][2]int64) *lossyExchange {
	return &lossyExchange{
		delay:   delay,
		loss:    loss,
		rng:     rand.New(rand.NewPCG(seed, 0x5eed)),
		outages: outages,
		latest:  map[string]map[string]flow.Report{},
	}
}

// down reports whether the exchange is out at t.
func (x *lossyExchange) down(t int64) bool { return inSpans(x.outages, t) }

func (x *lossyExchange) Publish(rs []flow.Report) error {
	out := x.down(x.now)
	for _, r := range rs {
		x.records++
		if out || x.loss > 0 && x.rng.Float64() < x.loss {
			continue
		}
		x.pending = append(x.pending, pending{visible: x.now + x.delay, r: r})
	}
	return nil
}

// advance makes visible what is due at now, unless the exchange is out.
func (x *lossyExchange) advance(now int64) {
	x.now = now
	if x.down(now) {
		return
	}
	i := 0
	for ; i < len(x.pending) && x.pending[i].visible <= now; i++ {
		r := x.pending[i].r
		bs := x.latest[r.Budget]
		if bs == nil {
			bs = map[string]flow.Report{}
			x.latest[r.Budget] = bs
		}
		if old, ok := bs[r.Source]; !ok || !r.At.Before(old.At) {
			bs[r.Source] = r
		}
	}
	x.pending = x.pending[i:]
}

func (x *lossyExchange) View(budget string, dst []flow.Report) []flow.Report {
	n := len(dst)
	for _, r := range x.latest[budget] {
		dst = append(dst, r)
	}
	slices.SortFunc(dst[n:], func(a, b flow.Report) int { return strings.Compare(a.Source, b.Source) })
	return dst
}
