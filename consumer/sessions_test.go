package consumer

import (
	"errors"
	"testing"
	"time"
)

// TestGiveUp steps the give-up count through fixed instants: three aborts
// within less than the window do not stop the worker, a pause longer than
// the window starts the count again, and three aborts spanning the
// window stop it.
func TestGiveUp(t *testing.T) {
	w := &Worker{cfg: defaultCfg()}
	GiveUp(3, 10*time.Second).apply(&w.cfg)
	refused := errors.New("refused")
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		at   time.Duration
		stop bool
	}{
		{0, false},
		{4 * time.Second, false},
		{8 * time.Second, false}, // 3 aborts, but over 8s only
		{19 * time.Second, false},
		{30 * time.Second, false}, // 11s after the last: counting again
		{38 * time.Second, false}, // 2 aborts
		{40 * time.Second, true},  // 3 aborts over 10s
	} {
		err := w.giveUp(refused, t0.Add(s.at))
		if (err != nil) != s.stop {
			t.Fatalf("step %d (t0+%v): %v, want stop %v", i, s.at, err, s.stop)
		}
		if err != nil && !errors.Is(err, refused) {
			t.Fatalf("step %d: %v does not wrap the produce error", i, err)
		}
	}
}

func TestSessionOptionsChecked(t *testing.T) {
	for _, o := range []Opt{GiveUp(0, time.Second), GiveUp(1, -time.Second), SessionRestarts(-1, 0, 0)} {
		c := defaultCfg()
		o.apply(&c)
		c.clientOpts, c.topics = nil, Topics{}
		ClientOpts(nil).apply(&c)
		WithTopics(Topics{Input: []string{"in"}, Output: "out", DeadLetter: "dlq", Stats: "s"}).apply(&c)
		if err := c.validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v accepted: %v", o, err)
		}
	}
}

// TestSessionFailuresWithinSpan steps the count of failed sessions: only
// failures less than the span ago count.
func TestSessionFailuresWithinSpan(t *testing.T) {
	var f failures
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		at   time.Duration
		want int
	}{
		{0, 1}, {time.Minute, 2}, {2 * time.Minute, 3},
		{5 * time.Minute, 3},             // the first is 5m old: out
		{6*time.Minute + time.Second, 3}, // 1m is out; 2m, 5m and this one in
		{12 * time.Minute, 1},            // every earlier one is more than 5m old
	} {
		if got := f.add(t0.Add(s.at), 5*time.Minute); got != s.want {
			t.Fatalf("step %d (t0+%v): %d failures within the span, want %d", i, s.at, got, s.want)
		}
	}
}
