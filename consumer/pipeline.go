package consumer

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// Outcome is what became of an event.
type Outcome uint8

// Outcomes.
const (
	// OutcomePass: the event is written to Event.Topic.
	OutcomePass Outcome = iota + 1
	// OutcomeReject: the event is written to the rejected topic with
	// reason headers, or dropped and counted when there is none.
	OutcomeReject
	// OutcomeDeadLetter: the record is written to the dead-letter topic
	// with error headers.
	OutcomeDeadLetter
	// OutcomeDrop: the event is consumed without output and counted (for
	// user stages that filter).
	OutcomeDrop
	// OutcomeDelay: a delay budget has no allowance for the event now.
	// The partition stops at this record, is paused, and fetches it again
	// when the budget refills (see delay.go). Nothing is written.
	OutcomeDelay
)

var outcomeNames = [...]string{OutcomePass: "pass", OutcomeReject: "reject", OutcomeDeadLetter: "dead-letter", OutcomeDrop: "drop", OutcomeDelay: "delay"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Decider decides the events of one budget on one partition. *flow.Lane
// implements it; a Decider is used by one goroutine (the partition's).
type Decider interface {
	Decide(now time.Time, score float64) flow.Verdict
}

// Event is one record on its way through the pipeline. The worker reuses
// one Event per partition: stages must not keep a pointer to it, nor to the
// slices it holds, after they return.
type Event struct {
	// Record is the source record (topic, partition, offset, key, value,
	// headers). Stages must not modify it.
	Record *kgo.Record
	// Now is the processing time of the event's batch.
	Now time.Time
	// Source is the name of the record's partition, "topic/partition".
	Source string

	// Fields are the decoded fields (after the decode and score stages).
	Fields Decoded
	// Verdict is the flow decision (after the decide stage).
	Verdict flow.Verdict
	// Assignments are the experiment assignments (after the split stage).
	Assignments []splitter.Assignment

	// Topic is the destination of a passed event (set by the route stage).
	Topic string
	// Headers are added to the output record, after the source record's
	// headers and the throttler's own.
	Headers []kgo.RecordHeader
	// Err says why a dead-lettered record was refused.
	Err *RecordError
	// RejectReason says why a rejected event was rejected ("paced",
	// "score", …, or a user stage's reason); RejectedBy names the budget.
	RejectReason string
	RejectedBy   string

	lanes   []Decider      // the partition's lanes, by budget index
	caps    *partitionCaps // the partition's caps; nil without caps
	limits  []Decider      // the partition's lanes of the variant limits, by limit index
	budgets *budgetTable   // the partition's budget table (reset keeps it); nil: the decoder's

	// The decode stage's scan results, for the score stage of the same
	// decoder (scanned by scanDec when it is not nil).
	scan    []span
	scanDec *Decoder
}

// DeadLetter marks the event as a bad record and returns
// OutcomeDeadLetter; a stage returns its result.
func (e *Event) DeadLetter(err *RecordError) Outcome {
	e.Err = err
	return OutcomeDeadLetter
}

// Reject marks the event as rejected by budget for reason and returns
// OutcomeReject.
func (e *Event) Reject(budget, reason string) Outcome {
	e.RejectedBy, e.RejectReason = budget, reason
	return OutcomeReject
}

// AddHeader adds a header to the output record.
func (e *Event) AddHeader(key string, value []byte) {
	e.Headers = append(e.Headers, kgo.RecordHeader{Key: key, Value: value})
}

// Lane returns the partition's decider of a budget index, or nil.
func (e *Event) Lane(budgetIndex int) Decider {
	if budgetIndex < 0 || budgetIndex >= len(e.lanes) {
		return nil
	}
	return e.lanes[budgetIndex]
}

// reset prepares a reused Event for the next record, keeping capacity.
//
// Field by field, skipping stores that change nothing: the partition's
// Event lives on the heap, and a whole-struct assignment there pays a bulk
// write barrier over every pointer slot while the GC marks (5% of the
// worker's CPU in the bench profile). TestEventReset checks that every
// field is covered.
func (e *Event) reset(r *kgo.Record, now time.Time, source string, lanes []Decider) {
	e.Record = r
	e.Now = now
	if e.Source != source {
		e.Source = source
	}
	e.Fields.clear() // then the decode stage's clear stores only numbers
	e.Fields.BudgetIndex = 0
	if e.Verdict != (flow.Verdict{}) {
		e.Verdict = flow.Verdict{}
	}
	e.Assignments = e.Assignments[:0]
	if e.Topic != "" {
		e.Topic = ""
	}
	e.Headers = e.Headers[:0]
	if e.Err != nil {
		e.Err = nil
	}
	if e.RejectReason != "" {
		e.RejectReason = ""
	}
	if e.RejectedBy != "" {
		e.RejectedBy = ""
	}
	e.lanes = lanes
	if e.limits != nil {
		e.limits = nil
	}
	if e.scanDec != nil {
		e.scanDec = nil
	}
	// e.scan keeps its room; its contents are valid only with scanDec.
}

// NewEvent returns an Event for r, for testing stages and pipelines
// without a broker. lanes are the deciders by budget index.
func NewEvent(r *kgo.Record, now time.Time, lanes ...Decider) *Event {
	e := &Event{}
	e.reset(r, now, sprintf("%s/%d", r.Topic, r.Partition), lanes)
	return e
}

// Handler processes one event and says what became of it.
type Handler func(*Event) Outcome

// Middleware wraps a Handler: it may inspect or change the event, answer
// without calling next (to reject or dead-letter), or call next.
//
// The worker calls a pipeline's Handler from every partition goroutine at
// once: a Middleware must be safe for concurrent use, and keep
// per-partition state only through the Event.
type Middleware func(next Handler) Handler

// Stage is a named Middleware, a step of a Pipeline.
type Stage struct {
	Name       string
	Middleware Middleware
}

// Pipeline composes stages, first outermost, around a terminal Handler.
// Build it before the worker starts; it is not safe for concurrent
// modification.
type Pipeline struct {
	stages   []Stage
	terminal Handler
}

// NewPipeline returns a pipeline of stages ending in terminal.
func NewPipeline(terminal Handler, stages ...Stage) *Pipeline {
	return &Pipeline{stages: append([]Stage(nil), stages...), terminal: terminal}
}

// Use appends stages after the existing ones (just before the terminal
// handler) and returns p.
func (p *Pipeline) Use(stages ...Stage) *Pipeline {
	p.stages = append(p.stages, stages...)
	return p
}

// Insert puts s just before the stage named before; an unknown name is an
// error.
func (p *Pipeline) Insert(before string, s Stage) error {
	for i, st := range p.stages {
		if st.Name == before {
			p.stages = append(p.stages[:i], append([]Stage{s}, p.stages[i:]...)...)
			return nil
		}
	}
	return &ConfigError{Option: "Pipeline.Insert", Reason: "no stage named " + before}
}

// Replace swaps the stage named name for s; an unknown name is an error.
func (p *Pipeline) Replace(name string, s Stage) error {
	for i, st := range p.stages {
		if st.Name == name {
			p.stages[i] = s
			return nil
		}
	}
	return &ConfigError{Option: "Pipeline.Replace", Reason: "no stage named " + name}
}

// Names returns the stage names in order.
func (p *Pipeline) Names() []string {
	out := make([]string, len(p.stages))
	for i, s := range p.stages {
		out[i] = s.Name
	}
	return out
}

// Handler composes the pipeline into one Handler.
func (p *Pipeline) Handler() Handler {
	h := p.terminal
	for i := len(p.stages) - 1; i >= 0; i-- {
		h = p.stages[i].Middleware(h)
	}
	return h
}

// StandardPipeline returns the built-in stages, decode → score → caps →
// decide → split, ending in route to output (or a variant's topic). sp may
// be nil (no experiments).
func StandardPipeline(dec *Decoder, sp *splitter.Splitter, output string) *Pipeline {
	return NewPipeline(RouteHandler(output),
		Stage{StageDecode, DecodeStage(dec)},
		Stage{StageScore, ScoreStage(dec)},
		Stage{StageCaps, CapsStage()},
		Stage{StageDecide, DecideStage()},
		Stage{StageSplit, SplitStage(sp)},
	)
}

// DecodeStage validates the record value and fills Event.Fields.
func DecodeStage(d *Decoder) Middleware {
	return func(next Handler) Handler {
		return func(e *Event) Outcome {
			r := e.Record
			if len(r.Key) > MaxKeyAndHeaderBytes || len(r.Headers) > 0 && keyAndHeadersSize(r) > MaxKeyAndHeaderBytes {
				return e.DeadLetter(recErr(StageDecode, ReasonTooLarge, "", sprintf("key and headers take %d bytes, more than %d", keyAndHeadersSize(r), MaxKeyAndHeaderBytes)))
			}
			if n := len(d.ps.segs); cap(e.scan) < n {
				e.scan = make([]span, n)
			}
			res := e.scan[:len(d.ps.segs)]
			tab := e.budgets
			if tab == nil {
				tab = d.tab
			}
			scanned, err := d.decode(r.Key, r.Value, r.Timestamp, &e.Fields, res, tab)
			if err != nil {
				return e.DeadLetter(err.(*RecordError))
			}
			if scanned {
				e.scanDec = d
			}
			return next(e)
		}
	}
}

// ScoreStage computes Event.Fields.Score.
func ScoreStage(d *Decoder) Middleware {
	return func(next Handler) Handler {
		return func(e *Event) Outcome {
			var res []span
			if e.scanDec == d {
				res = e.scan[:len(d.ps.segs)]
			}
			if err := d.score(e.Record.Value, &e.Fields, res, res != nil); err != nil {
				return e.DeadLetter(err.(*RecordError))
			}
			return next(e)
		}
	}
}

// DecideStage asks the partition's lane of the event's budget. An event of
// a budget without a lane is a bad record (ReasonUnknownBudget).
func DecideStage() Middleware {
	return func(next Handler) Handler {
		return func(e *Event) Outcome {
			l := e.Lane(e.Fields.BudgetIndex)
			if l == nil {
				return e.DeadLetter(recErr(StageDecide, ReasonUnknownBudget, "", e.Fields.Budget))
			}
			e.Verdict = l.Decide(e.Now, e.Fields.Score)
			if e.Verdict.Reason == flow.ReasonDelayed {
				return OutcomeDelay
			}
			if !e.Verdict.Pass {
				by := e.Verdict.By
				if by == "" {
					by = e.Fields.Budget
				}
				return e.Reject(by, e.Verdict.Reason.String())
			}
			return next(e)
		}
	}
}

// SplitStage assigns the event's key to experiments. A nil splitter, or an
// event without a key, gets no assignment.
func SplitStage(sp *splitter.Splitter) Middleware {
	return func(next Handler) Handler {
		if sp == nil {
			return next
		}
		return func(e *Event) Outcome {
			if e.Fields.Key != "" {
				e.Assignments = sp.Assign(bytesOf(e.Fields.Key), e.Assignments)
			}
			return next(e)
		}
	}
}

// RouteHandler is the terminal handler: a passed event goes to the topic of
// its first assignment (splitter.Route), else to output.
func RouteHandler(output string) Handler {
	return func(e *Event) Outcome {
		if t, ok := splitter.Route(e.Assignments); ok && t != "" {
			e.Topic = t
		} else {
			e.Topic = output
		}
		if e.Topic == "" {
			return e.DeadLetter(recErr(StageRoute, ReasonNoDestination, "", ""))
		}
		return OutcomePass
	}
}

// Run calls h for e and turns a panic in any stage into a dead letter
// (ReasonStagePanic), so that one bad record never stops a partition.
func Run(h Handler, e *Event) (o Outcome) {
	defer func() {
		if v := recover(); v != nil {
			e.Err = &RecordError{Stage: "pipeline", Reason: ReasonStagePanic, Detail: fmt.Sprint(v)}
			o = OutcomeDeadLetter
		}
	}()
	o = h(e)
	if o == OutcomeDeadLetter && e.Err == nil {
		e.Err = recErr("pipeline", ReasonUnexplained, "", "")
	}
	return o
}
