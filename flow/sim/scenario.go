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
	"math"
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
}

// Node is one simulated worker and the traffic offered to it.
type Node struct {
	Name   string    `yaml:"name"`
	Rate   float64   `yaml:"rate"` // events per second
	Start  *Duration `yaml:"start"`
	Stop   *Duration `yaml:"stop"` // the node dies: its traffic is gone
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
	Parent  string      `yaml:"parent"`
}

// RewardSpec makes a budget count rewards: each pass converts with
// Probability after Delay.
type RewardSpec struct {
	Probability float64  `yaml:"probability"`
	Delay       Duration `yaml:"delay"`
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

// Validate checks every field and returns the first problem, naming it.
func (s *Scenario) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case s.Duration <= 0:
		return bad("duration", "must be positive")
	case s.SyncInterval <= 0:
		return bad("sync_interval", "must be positive")
	case s.SyncDelay < 0:
		return bad("sync_delay", "must not be negative")
	case !(s.SyncLoss >= 0 && s.SyncLoss < 1):
		return bad("sync_loss", "must be a probability in [0, 1)")
	case s.TuneInterval <= 0:
		return bad("tune_interval", "must be positive")
	case len(s.Nodes) == 0:
		return bad("nodes", "at least one node is needed")
	case len(s.Budgets) == 0:
		return bad("budgets", "at least one budget is needed")
	}
	names := map[string]bool{}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			return bad(f+".name", "must not be empty")
		case names[n.Name]:
			return bad(f+".name", "%q is used twice", n.Name)
		case !(n.Rate >= 0) || !finite(n.Rate):
			return bad(f+".rate", "must be a finite number ≥ 0")
		case !(n.Jitter >= 0 && n.Jitter <= 1):
			return bad(f+".jitter", "must be in [0, 1]")
		case n.Start != nil && *n.Start < 0:
			return bad(f+".start", "must not be negative")
		case n.Stop != nil && n.Start != nil && *n.Stop <= *n.Start:
			return bad(f+".stop", "must be after start")
		case n.Stop != nil && *n.Stop <= 0:
			return bad(f+".stop", "must be positive")
		}
		names[n.Name] = true
		for j, st := range n.Steps {
			g := fmt.Sprintf("%s.steps[%d]", f, j)
			switch {
			case st.At < 0:
				return bad(g+".at", "must not be negative")
			case j > 0 && st.At <= n.Steps[j-1].At:
				return bad(g+".at", "steps must be in increasing time order")
			case !(st.Rate >= 0) || !finite(st.Rate):
				return bad(g+".rate", "must be a finite number ≥ 0")
			}
		}
	}
	budgets := map[string]int{}
	for i, b := range s.Budgets {
		f := fmt.Sprintf("budgets[%d]", i)
		if b.Name == "" {
			return bad(f+".name", "must not be empty")
		}
		if _, dup := budgets[b.Name]; dup {
			return bad(f+".name", "%q is used twice", b.Name)
		}
		budgets[b.Name] = i
		switch {
		case !(b.Target > 0) || !finite(b.Target):
			return bad(f+".target", "must be a positive number")
		case b.Period < 0:
			return bad(f+".period", "must not be negative")
		case b.Period > 0 && b.End != nil:
			return bad(f+".period", "use either period or begin/end, not both")
		case b.Period == 0 && b.End == nil:
			return bad(f+".end", "a budget needs an end (with an optional begin) or a period")
		case b.Begin != nil && *b.Begin < 0:
			return bad(f+".begin", "must not be negative")
		case b.End != nil && *b.End <= b.begin():
			return bad(f+".end", "must be after begin")
		case b.Reserve < 0:
			return bad(f+".reserve", "must not be negative")
		case b.Period > 0 && b.Reserve >= b.Period:
			return bad(f+".reserve", "must be shorter than the period")
		case b.End != nil && b.Reserve.D() >= b.End.D()-b.begin().D():
			return bad(f+".reserve", "must be shorter than the window")
		case !(*b.Share >= 0 && *b.Share <= 1):
			return bad(f+".share", "must be in [0, 1]")
		}
		switch b.Score {
		case "", "uniform", "normal", "exponential":
		default:
			return bad(f+".score", "%q is not one of uniform, normal, exponential", b.Score)
		}
		if r := b.Reward; r != nil {
			switch {
			case !(r.Probability > 0 && r.Probability <= 1):
				return bad(f+".reward.probability", "must be in (0, 1]")
			case r.Delay < 0:
				return bad(f+".reward.delay", "must not be negative")
			}
		}
	}
	for i, b := range s.Budgets {
		if b.Parent == "" {
			continue
		}
		f := fmt.Sprintf("budgets[%d].parent", i)
		if _, ok := budgets[b.Parent]; !ok {
			return bad(f, "no budget named %q", b.Parent)
		}
		seen := map[string]bool{b.Name: true}
		for p := b.Parent; p != ""; p = s.Budgets[budgets[p]].Parent {
			if seen[p] {
				return bad(f, "parents form a cycle through %q", p)
			}
			seen[p] = true
		}
	}
	return nil
}

func (b *Budget) begin() Duration {
	if b.Begin == nil {
		return 0
	}
	return *b.Begin
}
