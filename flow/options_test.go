package flow

import (
	"strings"
	"testing"
	"time"
)

// Every option is checked when the tree is built: a value out of its range
// is an error that names it, a value in range builds the tree.
func TestOptionsChecked(t *testing.T) {
	budgets := []Budget{{Name: "b", Target: 100, Period: time.Hour}}
	for _, c := range []struct {
		name     string
		bad, ok  Option
		mentions string
	}{
		{"StaleAfter", StaleAfter(-time.Second), StaleAfter(5 * time.Second), "stale-after"},
		{"Decay", Decay(1), Decay(0.25), "decay"},
		{"ScoreMemory", ScoreMemory(0), ScoreMemory(time.Minute), "score memory"},
		{"MaxRewardDelay", MaxRewardDelay(-time.Second), MaxRewardDelay(time.Minute), "max reward delay"},
		{"DropAfter", DropAfter(-time.Second), DropAfter(time.Minute), "drop-after"},
		{"IdleRetune", IdleRetune(-time.Second), IdleRetune(time.Minute), "idle retune"},
		{"PriorShare", PriorShare(0), PriorShare(0.5), "prior share"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewTree(budgets, c.bad); err == nil || !strings.Contains(err.Error(), c.mentions) {
				t.Errorf("bad %s: error %v, want one naming %q", c.name, err, c.mentions)
			}
			if _, err := NewTree(budgets, c.ok); err != nil {
				t.Errorf("good %s: %v", c.name, err)
			}
		})
	}
}
