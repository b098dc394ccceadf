package sim

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"

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
	outages [][2]int64               // [from, to) in Unix nanoseconds
	pending []pending                // in publication order, so in visibility order
	latest  map[string][]flow.Report // per budget, by source (sorted)
	records int
	// fresh: per source that beats, the instant of its latest visible
	// beat, which a View gives as the At of each of its reports (the
	// instant they are known to hold as of, as stats.View gives a
	// source's latest record)
	fresh map[string]int64
	// shown, when set, is called with each report made visible: what
	// every reader of the exchange folds
	shown func(flow.Report)
}

type pending struct {
	visible int64
	r       flow.Report
	beat    bool // a beat of r.Source at r.At, no report
}

func newLossyExchange(delay int64, loss float64, seed uint64, outages [][2]int64) *lossyExchange {
	return &lossyExchange{
		delay:   delay,
		loss:    loss,
		rng:     rand.New(rand.NewPCG(seed, 0x5eed)),
		outages: outages,
		latest:  map[string][]flow.Report{},
		fresh:   map[string]int64{},
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

// beat says, as a worker's ledger does with each record (a delta or a
// heartbeat), that source's reports published so far hold as of at: a
// source whose lanes only publish what changed is no less current for its
// budgets without events. It becomes visible, or is lost, like a report.
func (x *lossyExchange) beat(source string, at int64) {
	if x.down(x.now) || x.loss > 0 && x.rng.Float64() < x.loss {
		return
	}
	x.pending = append(x.pending, pending{visible: x.now + x.delay, r: flow.Report{Source: source, At: time.Unix(0, at)}, beat: true})
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
		if x.pending[i].beat {
			x.fresh[r.Source] = max(x.fresh[r.Source], r.At.UnixNano())
			continue
		}
		bs := x.latest[r.Budget]
		j, ok := slices.BinarySearchFunc(bs, r.Source, func(o flow.Report, s string) int { return strings.Compare(o.Source, s) })
		switch {
		case !ok:
			x.latest[r.Budget] = slices.Insert(bs, j, r)
		case !r.At.Before(bs[j].At):
			bs[j] = r
		}
		if x.shown != nil {
			x.shown(r)
		}
	}
	x.pending = x.pending[i:]
}

func (x *lossyExchange) View(budget string, dst []flow.Report) []flow.Report {
	n := len(dst)
	dst = append(dst, x.latest[budget]...)
	for i := n; i < len(dst); i++ {
		if at, ok := x.fresh[dst[i].Source]; ok && at > dst[i].At.UnixNano() {
			dst[i].At = time.Unix(0, at)
		}
	}
	return dst
}
