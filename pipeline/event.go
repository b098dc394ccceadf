package pipeline

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
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
	// OutcomeDelay: the event cannot be decided now: a delay budget has no
	// allowance for it, or its schema could not be had yet. The partition
	// stops at this record, is paused, and fetches it again at
	// Event.RetryAt (when zero, when the budget refills). Nothing is
	// written.
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
// slices it holds, after they return. An Event carries what is known of
// the record; what a stage keeps from one event to the next belongs to the
// stage's instance for the partition (see Stage).
type Event struct {
	// Record is the source record (topic, partition, offset, key, value,
	// headers). Stages must not modify it.
	Record *kgo.Record
	// Now is the processing time of the event's batch.
	Now time.Time
	// Source is the name of the record's partition, "topic/partition".
	Source string

	// Fields are the decoded fields (after the decode and score stages).
	Fields decode.Decoded
	// Verdict is the flow decision (after the decide stage).
	Verdict flow.Verdict
	// Assignments are the experiment assignments (after the split stage).
	Assignments []splitter.Assignment
	// VariantLimited is set when a variant's limit refused the event: a
	// passed event then goes to the output topic, not its variant's.
	VariantLimited bool

	// Topic is where the event's record is written, "" for nowhere (set
	// by the pipeline's route; see Router).
	Topic string
	// Headers are added to the output record, after the source record's
	// headers and the throttler's own.
	Headers []kgo.RecordHeader
	// Err says why a dead-lettered record was refused.
	Err *decode.RecordError
	// RejectReason says why a rejected event was rejected ("paced",
	// "score", …, or a user stage's reason); RejectedBy names the budget.
	RejectReason string
	RejectedBy   string
	// RetryAt is when to read the record again after OutcomeDelay; zero
	// for a delay budget's refill.
	RetryAt time.Time
}

// DeadLetter marks the event as a bad record and returns
// OutcomeDeadLetter; a stage returns its result.
func (e *Event) DeadLetter(err *decode.RecordError) Outcome {
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

// Reset prepares a reused Event for the next record, keeping capacity.
//
// Field by field, skipping stores that change nothing: the partition's
// Event lives on the heap, and a whole-struct assignment there pays a bulk
// write barrier over every pointer slot while the GC marks (5% of the
// worker's CPU in the bench profile). TestEventReset checks that every
// field is covered.
func (e *Event) Reset(r *kgo.Record, now time.Time, source string) {
	e.Record = r
	e.Now = now
	if e.Source != source {
		e.Source = source
	}
	e.Fields.Clear()
	if e.Verdict != (flow.Verdict{}) {
		e.Verdict = flow.Verdict{}
	}
	e.Assignments = e.Assignments[:0]
	if e.VariantLimited {
		e.VariantLimited = false
	}
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
	if !e.RetryAt.IsZero() {
		e.RetryAt = time.Time{}
	}
}

// NewEvent returns an Event for r, for testing stages and pipelines
// without a broker.
func NewEvent(r *kgo.Record, now time.Time) *Event {
	e := &Event{}
	e.Reset(r, now, fmt.Sprintf("%s/%d", r.Topic, r.Partition))
	return e
}
