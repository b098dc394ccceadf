// Package pipeline is what happens to one event between its record and
// its destination: the Event, the stages that decode, score, cap, decide
// and split it, the one place that assembles them (Standard) and the one
// route that picks every destination (Router). It knows no consumer
// group and no transaction: package consumer runs a pipeline per
// partition and writes what it decides.
//
// A stage is built once per partition (Stage.New gets the partition's
// Partition), so that whatever a stage keeps between events — a dedup
// window, the caps' key table, the room of the decoder's scan, the lanes
// of variant limits — belongs to that partition alone and is dropped with
// it. State that must survive a crash is kept through Partition.Keep and
// written in the partition's transactions.
package pipeline

import (
	"fmt"

	"github.com/throttler/throttler/decode"
)

// Handler processes one event and says what became of it.
type Handler func(*Event) Outcome

// Middleware wraps a Handler: it may inspect or change the event, answer
// without calling next (to reject or dead-letter), or call next.
type Middleware func(next Handler) Handler

// Stage is a named step of a Pipeline. New builds the stage for one
// partition: it is called once per partition, on the partition's
// goroutine, before the partition's first event, and the Middleware it
// returns sees only that partition's events, one at a time. State the
// stage keeps between events lives in that Middleware (its closure) and
// goes with the partition; an error stops the worker.
type Stage struct {
	Name string
	New  func(*Partition) (Middleware, error)
	// Changelog names the compacted topic the stage's kept State writes
	// (Partition.Keep), partitioned like the input: the worker creates it
	// with the input's partition count and writes each of its records to
	// the partition the record names. "" for none.
	Changelog string
}

// Func returns a stage whose Middleware is the same for every partition:
// a stage that keeps nothing between events, or whose state is safe for
// concurrent use by every partition.
func Func(name string, m Middleware) Stage {
	return Stage{Name: name, New: func(*Partition) (Middleware, error) { return m, nil }}
}

// ConfigError names the option whose value is wrong; it wraps
// ErrInvalidConfig.
type ConfigError = decode.ConfigError

// ErrInvalidConfig is wrapped by every error about a pipeline's stages or
// options.
var ErrInvalidConfig = decode.ErrInvalidConfig

// Pipeline composes stages, first outermost, ending in the route of the
// passed events. Build it before the worker starts; it is not safe for
// concurrent modification.
type Pipeline struct {
	stages []Stage
	router Router
}

// New returns a pipeline of stages whose events go where r says.
func New(r Router, stages ...Stage) *Pipeline {
	return &Pipeline{stages: append([]Stage(nil), stages...), router: r}
}

// Use appends stages after the existing ones (just before the route) and
// returns p.
func (p *Pipeline) Use(stages ...Stage) *Pipeline {
	p.stages = append(p.stages, stages...)
	return p
}

// Insert puts s just before the stage named before; an unknown name is an
// error.
func (p *Pipeline) Insert(before string, s Stage) error {
	i := p.index(before)
	if i < 0 {
		return &ConfigError{Option: "Pipeline.Insert", Reason: "no stage named " + before}
	}
	p.stages = append(p.stages[:i], append([]Stage{s}, p.stages[i:]...)...)
	return nil
}

// Replace swaps the stage named name for s; an unknown name is an error.
func (p *Pipeline) Replace(name string, s Stage) error {
	i := p.index(name)
	if i < 0 {
		return &ConfigError{Option: "Pipeline.Replace", Reason: "no stage named " + name}
	}
	p.stages[i] = s
	return nil
}

func (p *Pipeline) index(name string) int {
	for i, st := range p.stages {
		if st.Name == name {
			return i
		}
	}
	return -1
}

// Names returns the stage names in order.
func (p *Pipeline) Names() []string {
	out := make([]string, len(p.stages))
	for i, s := range p.stages {
		out[i] = s.Name
	}
	return out
}

// Changelogs returns the changelog topics of the stages (Stage.Changelog).
func (p *Pipeline) Changelogs() []string {
	var out []string
	for _, s := range p.stages {
		if s.Changelog != "" {
			out = append(out, s.Changelog)
		}
	}
	return out
}

// Build builds every stage for part (Stage.New, in order) and composes
// them into the partition's Chain.
func (p *Pipeline) Build(part *Partition) (*Chain, error) {
	r := p.router
	h := Handler(func(e *Event) Outcome { return r.route(e, OutcomePass) })
	ms := make([]Middleware, len(p.stages))
	for i, s := range p.stages {
		m, err := s.New(part)
		if err != nil {
			return nil, fmt.Errorf("stage %s of %s: %w", s.Name, part.Source, err)
		}
		ms[i] = m
	}
	for i := len(ms) - 1; i >= 0; i-- {
		h = ms[i](h)
	}
	return &Chain{h: h, r: r}, nil
}

// Chain is a pipeline built for one partition. It is used by one
// goroutine.
type Chain struct {
	h Handler
	r Router
}

// Run runs e through the stages (see Run) and routes it: Event.Topic is
// then where its record goes, "" for nowhere. The outcome is one of the
// five Outcomes: a stage's unknown outcome, or a pass with no topic to go
// to, is a dead letter.
func (c *Chain) Run(e *Event) Outcome {
	return c.r.route(e, Run(c.h, e))
}

// Run calls h for e and turns a panic in any stage into a dead letter
// (ReasonStagePanic), so that one bad record never stops a partition.
func Run(h Handler, e *Event) (o Outcome) {
	defer func() {
		if v := recover(); v != nil {
			e.Err = &decode.RecordError{Stage: "pipeline", Reason: decode.ReasonStagePanic, Detail: fmt.Sprint(v)}
			o = OutcomeDeadLetter
		}
	}()
	o = h(e)
	if o == OutcomeDeadLetter && e.Err == nil {
		e.Err = recErr("pipeline", decode.ReasonUnexplained, "", "")
	}
	return o
}

func recErr(stage string, reason decode.Reason, field, detail string) *decode.RecordError {
	return &decode.RecordError{Stage: stage, Reason: reason, Field: field, Detail: detail}
}
