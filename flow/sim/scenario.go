// Package sim is throttler's deterministic simulator: N nodes, each running
// its own flow controllers in virtual time, offered traffic from profiles,
// and exchanging counters through an in-memory exchange with a configurable
// sync interval, delay and loss. It is how flow's accuracy is proven.
package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a Go duration string ("1.5s").
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration like 1s or 250ms", n.Line)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (like 1s or 250ms)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Scenario is one simulation; see the package README for the file format.
type Scenario struct {
	Duration     Duration `yaml:"duration"`
	SyncInterval Duration `yaml:"sync_interval"`
	SyncDelay    Duration `yaml:"sync_delay"`
	SyncLoss     float64  `yaml:"sync_loss"`
	TuneInterval Duration `yaml:"tune_interval"` // optional, default 100ms
	Seed         uint64   `yaml:"seed"`
	Nodes        []Node   `yaml:"nodes"`
	Budgets      []Budget `yaml:"budgets"`
	// Partitions, when set, makes the traffic belong to partitions that
	// move between the nodes (partition mode); the nodes then only say
	// who is in the group when. Without it every node is a source of its
	// own traffic, which dies with it (node mode).
	Partitions *Partitions `yaml:"partitions"`
	// Outages are spans when the exchange is down: what is published
	// then is lost, and readers keep the view they had.
	Outages []Span `yaml:"outages"`
	// Restarts are spans when the broker is down (partition mode): every
	// node loses its partitions and its uncommitted work, the exchange is
	// out, and events produced meanwhile wait; after it, the partitions
	// are assigned again (after Partitions.Rebalance) and read from their
	// last commits.
	Restarts []Span `yaml:"restarts"`
	// Stalls are spans when every partition (or every one of some nodes)
	// stands still with its owner
	// (partition mode): its events wait, to be read at CatchUp times the
	// rate after, while the nodes tune and the exchange goes on; as when
	// the consumers have their partitions back after a broker restart but
	// fetch nothing yet, and then read the backlog all at once.
	Stalls []Stall `yaml:"stalls"`
	// ClockSteps step the nodes' clock (every node's at once, as the
	// test clock of a process or an NTP step on a shared host): from At
	// on, the nodes read the virtual time plus the sum of the steps so
	// far. The events of the step in which the clock steps were read
	// before it: they are decided with the old clock, after the nodes
	// tuned with the new one. Budgets' windows are in the nodes' time;
	// the ground truth stays in virtual time.
	ClockSteps []ClockStep `yaml:"clock_steps"`
}

// Stall is a span of a stall. Held: the first events read after it were
// fetched when it began, and are decided with the instant it began, as a
// batch that a decode held while it waited for the schema registry.
type Stall struct {
	Span `yaml:",inline"`
	Held bool `yaml:"held"`
	// Nodes, when set, are the nodes whose partitions stall: the others
	// read on (consumers that get their fetches back one after another).
	Nodes []string `yaml:"nodes"`
}

// ClockStep moves the nodes' clock by By (forward, or back when negative)
// at At, a multiple of the tune interval.
type ClockStep struct {
	At Duration `yaml:"at"`
	By Duration `yaml:"by"`
}

// Span is a span of virtual time, [From, To).
type Span struct {
	From Duration `yaml:"from"`
	To   Duration `yaml:"to"`
}

// Partitions is the traffic of partition mode: Count partitions share the
// cluster's Rate, each its weight, 1/(i+1)^Skew normalised. A partition is
// owned by one live node at a time, assigned stickily: a node that joins
// takes partitions from the most loaded ones, a node that leaves or
// crashes hands its own to the least loaded.
type Partitions struct {
	Count  int     `yaml:"count"`
	Rate   float64 `yaml:"rate"` // events per second, over all partitions
	Skew   float64 `yaml:"skew"`
	Jitter float64 `yaml:"jitter"` // relative noise on each partition's rate, per second
	Steps  []Step  `yaml:"steps"`  // changes of Rate
	// CommitInterval is how often an owner commits its partitions: their
	// counters (restored by the next owner) and the decisions made since
	// the last commit, which a crash loses (optional, default 100ms).
	CommitInterval Duration `yaml:"commit_interval"`
	// SessionTimeout is how long a crashed node's partitions wait for a
	// new owner (optional, default 6s).
	SessionTimeout Duration `yaml:"session_timeout"`
	// Rebalance is how long a partition that moves for a join, a leave or
	// after a broker restart waits for its new owner (optional, default
	// 1s).
	Rebalance Duration `yaml:"rebalance"`
	// CatchUp is how many times its rate a partition is read at while it
	// is behind (optional, default 10).
	CatchUp float64 `yaml:"catch_up"`
	// LaneIdle, when set, releases at each commit the lanes of an owned
	// partition that had no event for this long and whose counters are
	// committed, as the worker does (consumer.LaneIdle, three sync
	// intervals by default); the budget's next event there opens the lane
	// again from the committed counters (optional, default 0: lanes stay
	// open).
	LaneIdle Duration `yaml:"lane_idle"`
}

// Node is one simulated worker and the traffic offered to it.
type Node struct {
	Name  string    `yaml:"name"`
	Rate  float64   `yaml:"rate"` // events per second
	Start *Duration `yaml:"start"`
	// Stop: the node leaves. In node mode its traffic is gone: it
	// publishes its counters as it leaves, and they are published again
	// every sync interval (its source is idle, as a partition whose owner
	// writes heartbeats); in partition mode it commits and hands its
	// partitions over.
	Stop *Duration `yaml:"stop"`
	// Crash: the node is killed. In node mode its traffic is gone and its
	// last publication stands for it: what it passed since is never seen.
	// In partition mode what it decided since its last commit is lost (the
	// events are read again by the next owner), what it committed since
	// its last publication is unseen until the next owner publishes it.
	Crash  *Duration `yaml:"crash"`
	Steps  []Step    `yaml:"steps"`
	Jitter float64   `yaml:"jitter"` // relative noise on the rate, per second
}

// Step changes a node's rate at an instant.
type Step struct {
	At   Duration `yaml:"at"`
	Rate float64  `yaml:"rate"`
}

// Budget is one budget of the scenario.
type Budget struct {
	Name    string      `yaml:"name"`
	Target  float64     `yaml:"target"`
	Begin   *Duration   `yaml:"begin"`
	End     *Duration   `yaml:"end"`
	Period  Duration    `yaml:"period"`
	Reserve Duration    `yaml:"reserve"`
	Share   *float64    `yaml:"share"` // of every node's events; default 1 for leaves, 0 for parents
	Reward  *RewardSpec `yaml:"reward"`
	Score   string      `yaml:"score"` // uniform | normal | exponential
	Drift   []Drift     `yaml:"drift"` // changes of the score distribution
	Parent  string      `yaml:"parent"`
	// Prior is what the budget's definition tells flow of its rewards
	// before any is seen (reward budgets, optional): flow.Budget's
	// Conversion and RewardDelay.
	Prior *Prior `yaml:"prior"`
}

// Prior is a reward budget's prior conversion ratio and reward delay.
type Prior struct {
	Conversion float64  `yaml:"conversion"`
	Delay      Duration `yaml:"delay"`
}

// Drift changes a budget's scores from At on: score × Scale + Shift.
type Drift struct {
	At    Duration `yaml:"at"`
	Shift float64  `yaml:"shift"`
	Scale float64  `yaml:"scale"` // default 1
}

// RewardSpec makes a budget count rewards: each pass converts with
// Probability after a delay: Delay itself, or drawn from Distribution with
// mean Delay.
type RewardSpec struct {
	Probability float64  `yaml:"probability"`
	Delay       Duration `yaml:"delay"`
	// Distribution is fixed (default), exponential, or lognormal (with
	// Sigma, default 1: a long tail).
	Distribution string  `yaml:"distribution"`
	Sigma        float64 `yaml:"sigma"`
}

// FieldError names a scenario field and what is wrong with it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// ErrScenario is wrapped by every scenario error.
var ErrScenario = errors.New("invalid scenario")

// Unwrap lets errors.Is(err, ErrScenario) hold.
func (e *FieldError) Unwrap() error { return ErrScenario }

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes and validates a scenario; unknown fields are errors.
func Parse(data []byte) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Field: "scenario", Reason: "the file is empty"}
		}
		return nil, &FieldError{Field: "scenario", Reason: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	s.defaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Scenario) defaults() {
	if s.SyncInterval == 0 {
		s.SyncInterval = Duration(time.Second)
	}
	if s.TuneInterval == 0 {
		s.TuneInterval = Duration(100 * time.Millisecond)
	}
	if p := s.Partitions; p != nil {
		if p.CommitInterval == 0 {
			p.CommitInterval = Duration(100 * time.Millisecond)
		}
		if p.SessionTimeout == 0 {
			p.SessionTimeout = Duration(6 * time.Second)
		}
		if p.Rebalance == 0 {
			p.Rebalance = Duration(time.Second)
		}
		if p.CatchUp == 0 {
			p.CatchUp = 10
		}
	}
	parents := map[string]bool{}
	for _, b := range s.Budgets {
		if b.Parent != "" {
			parents[b.Parent] = true
		}
	}
	for i := range s.Budgets {
		b := &s.Budgets[i]
		if b.Share == nil {
			v := 1.0
			if parents[b.Name] {
				v = 0
			}
			b.Share = &v
		}
	}
}

func (b *Budget) begin() Duration {
	if b.Begin == nil {
		return 0
	}
	return *b.Begin
}
