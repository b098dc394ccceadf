package flow

import (
	"slices"
	"testing"
	"time"
)

// A source's owner may forget a budget's counters once they are of a
// period that ended StaleAfter ago and no lane of the budget is open
// there; never those of window, reward or delay budgets.
func TestForgettable(t *testing.T) {
	tree := mustTree(t, []Budget{
		{Name: "cap", Target: 100, Period: time.Minute},
		{Name: "win", Target: 100, Begin: t0, End: at(time.Hour)},
		{Name: "rew", Target: 10, Period: time.Minute, Rewards: true},
		{Name: "open", Target: 100, Period: time.Minute},
	})
	src := mustOpen(t, tree, "p0", t0)
	if src.Lane("open") == nil {
		t.Fatal("no lane of open")
	}
	p0 := t0.UnixNano() / int64(time.Minute) // t0 starts a period
	counted := []Counted{{"cap", p0}, {"win", 0}, {"rew", p0}, {"open", p0}, {"gone", p0}, {"cap-later", p0}}
	stale := 3 * time.Second // StaleAfter: three sync intervals of 1 s
	for _, c := range []struct {
		at   time.Duration
		want []string
	}{
		{30 * time.Second, nil},                      // its period runs
		{time.Minute + stale - time.Nanosecond, nil}, // ended, not StaleAfter ago
		{time.Minute + stale, []string{"cap"}},
		{time.Hour, []string{"cap"}}, // the window's end changes nothing
	} {
		got := src.Forgettable(at(c.at), counted, nil)
		if !slices.Equal(got, c.want) {
			t.Errorf("at +%v: %q, want %q", c.at, got, c.want)
		}
	}
	// counters of the current period stay, however old the lane
	if got := src.Forgettable(at(time.Minute+stale), []Counted{{"cap", p0 + 1}}, nil); len(got) != 0 {
		t.Errorf("counters of the current period forgettable: %q", got)
	}
}

// listExchange is an Exchange whose sources' reports can be removed, as an
// owner's forgetting removes them from the stats topic's View.
type listExchange map[string]map[string]Report

func (x listExchange) Publish(rs []Report) error {
	for _, r := range rs {
		if x[r.Budget] == nil {
			x[r.Budget] = map[string]Report{}
		}
		x[r.Budget][r.Source] = r
	}
	return nil
}

func (x listExchange) View(budget string, dst []Report) []Report {
	for _, src := range slices.Sorted(func(yield func(string) bool) {
		for s := range x[budget] {
			if !yield(s) {
				return
			}
		}
	}) {
		dst = append(dst, x[budget][src])
	}
	return dst
}

// A controller drops the peer of a source the exchange no longer lists
// once the peer's report is of a period that ended StaleAfter ago; a peer
// of the current period, or one still listed, stays.
func TestForgetPeers(t *testing.T) {
	ex := listExchange{}
	tree := mustTree(t, []Budget{{Name: "cap", Target: 1000, Period: time.Minute}}, Peers(ex))
	l := mustOpen(t, tree, "p0", t0).Lane("cap")
	if l == nil {
		t.Fatal("no lane")
	}
	p0 := t0.UnixNano() / int64(time.Minute)
	rep := func(src string, d time.Duration, period int64) Report {
		c := Counters{Offered: 10, Passed: 5}
		return Report{Budget: "cap", Source: src, At: at(d), Since: t0, Total: c, Period: period, InPeriod: c}
	}
	_ = ex.Publish([]Report{rep("p1", 5*time.Second, p0), rep("p2", 5*time.Second, p0), rep("p3", 5*time.Second, p0)})
	tree.Sync(at(6*time.Second), nil)
	peers := func() []string {
		c := tree.Controller("cap")
		c.mu.Lock()
		defer c.mu.Unlock()
		var out []string
		for _, p := range c.peerList {
			out = append(out, p.source)
			if c.srcs[p.source].peer != p {
				t.Errorf("peer %s not in srcs", p.source)
			}
		}
		if len(c.srcs) != len(out)+len(c.laneList) {
			t.Errorf("srcs %d entries for %d peers and %d lanes", len(c.srcs), len(out), len(c.laneList))
		}
		return out
	}
	if got := peers(); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("peers %q after the first sync", got)
	}
	// p1 forgotten in its period: kept; p3 reports the next period
	delete(ex["cap"], "p1")
	tree.Sync(at(30*time.Second), nil)
	if got := peers(); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("peers %q while their period runs", got)
	}
	_ = ex.Publish([]Report{rep("p3", 61*time.Second, p0+1)})
	tree.Sync(at(61500*time.Millisecond), nil)
	delete(ex["cap"], "p2")
	delete(ex["cap"], "p3")
	tree.Sync(at(time.Minute+2*time.Second), nil)
	if got := peers(); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("peers %q before StaleAfter past the period's end", got)
	}
	tree.Sync(at(time.Minute+3*time.Second), nil)
	if got := peers(); !slices.Equal(got, []string{"p3"}) {
		t.Fatalf("peers %q StaleAfter past the period's end, want p3 (of the current period)", got)
	}
}
