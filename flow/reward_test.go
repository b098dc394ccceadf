package flow

import (
	"errors"
	"math"
	"testing"
	"time"
)

// A reward budget's prior conversion ratio and delay pace its start: before
// any reward, the cluster passes at least what the prior says the ideal
// course takes (target / window / conversion per second), and at most five
// times that while it makes up the delay its rewards lag by; without a
// prior it assumes one reward per pass.
func TestRewardPriorPacesTheStart(t *testing.T) {
	start := func(b Budget) (int, Snapshot) {
		tree := mustTree(t, []Budget{b})
		l := mustOpen(t, tree, "p0", t0).Lane("clicks")
		passed := 0
		for k := 0; k < 50; k++ { // 5 s at 1000 events/s, no reward yet
			now := at(time.Duration(k) * 100 * time.Millisecond)
			tree.Tune(now)
			passed += offer(l, now, 100*time.Millisecond, 100, 0)
		}
		return passed, tree.Controller("clicks").Snapshot()
	}
	b := Budget{Name: "clicks", Target: 600, Begin: t0, End: at(300 * time.Second), Rewards: true} // 2 rewards/s
	blind, _ := start(b)
	b.Conversion, b.RewardDelay = 0.02, 10*time.Second // 100 passes/s
	passed, s := start(b)
	t.Logf("first 5 s: %d passes with the prior (ideal course 500), %d without", passed, blind)
	if passed < 500 || passed > 2500 {
		t.Errorf("%d passes in the first 5 s with the prior, want between 500 and 2500", passed)
	}
	if blind > 5*10+2 {
		t.Errorf("%d passes in the first 5 s without a prior, want one per reward wanted (at most five times 2/s)", blind)
	}
	if s.Conversion != 0.02 || s.RewardDelay != 10*time.Second {
		t.Errorf("conversion %v, delay %v: want the prior's", s.Conversion, s.RewardDelay)
	}
}

// A node that starts while its peers have fitted a budget's conversion
// takes their fit up (it is published in their reports) instead of
// starting from one reward per pass: at the next Sync, or at once when its
// first lane opens if the tree reads its peers itself (Peers).
func TestRewardFitFromPeers(t *testing.T) {
	b := Budget{Name: "clicks", Target: 600, Begin: t0, End: at(300 * time.Second), Rewards: true}
	var ex MemoryExchange
	_ = ex.Publish([]Report{{Budget: "clicks", Source: "p1", At: at(10 * time.Second), Since: t0,
		Total: Counters{Offered: 10000, Passed: 1000, Rewards: 15}, Conversion: 0.025, RewardDelay: 8 * time.Second}})
	for _, c := range []struct {
		name string
		opts []Option
		sync bool
	}{
		{"at the next Sync", []Option{PriorShare(0.5)}, true},
		{"at activation", []Option{PriorShare(0.5), Peers(&ex)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := mustTree(t, []Budget{b}, c.opts...)
			// the node's first event of the budget opens its lane, and
			// with it the controller
			if src := mustOpen(t, tree, "p0", t0); src.Get([]byte("clicks"), at(10*time.Second)) == nil {
				t.Fatal("no lane for clicks")
			}
			if c.sync {
				tree.Sync(at(10*time.Second), &ex)
			}
			s := tree.Controller("clicks").Snapshot()
			if math.Abs(s.Conversion-0.025) > 1e-9 || s.RewardDelay != 8*time.Second {
				t.Errorf("conversion %v, delay %v: want the peer's 0.025 and 8s", s.Conversion, s.RewardDelay)
			}
		})
	}
}

func TestRewardPriorValidation(t *testing.T) {
	for _, b := range []Budget{
		{Name: "x", Target: 1, Period: time.Second, Conversion: 0.1},
		{Name: "x", Target: 1, Period: time.Second, Rewards: true, Conversion: -1},
		{Name: "x", Target: 1, Period: time.Second, Rewards: true, RewardDelay: -time.Second},
	} {
		if _, err := NewTree([]Budget{b}); !errors.Is(err, ErrInvalidBudget) {
			t.Errorf("%+v: got %v, want an invalid budget", b, err)
		}
	}
}
