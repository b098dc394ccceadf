package pipeline

import (
	"fmt"
	"strconv"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/splitter"
)

// Stage names used in the standard pipeline, in RecordError.Stage and in
// the throttler-stage header.
const (
	StageDecode = decode.StageDecode
	StageScore  = decode.StageScore
	StageCaps   = "caps"
	StageDecide = "decide"
	StageSplit  = "split"
	StageRoute  = "route"
)

// DecodeStage validates the record and fills Event.Fields. Each partition
// keeps the room of the decoder's scan, in its topic's format, which the
// score stage of the same decoder reads. The decide stage tells which
// budgets exist. A record whose schema
// could not be had yet waits (OutcomeDelay, RetryAt when the decoder
// says): it is not a bad record.
func DecodeStage(d *decode.Decoder) Stage {
	return Stage{Name: StageDecode, New: func(part *Partition) (Middleware, error) {
		scan := d.NewScan(part.Topic)
		return func(next Handler) Handler {
			return func(e *Event) Outcome {
				r := e.Record
				if len(r.Key) > decode.MaxKeyAndHeaderBytes || len(r.Headers) > 0 && keyAndHeadersSize(r) > decode.MaxKeyAndHeaderBytes {
					return e.DeadLetter(recErr(StageDecode, decode.ReasonTooLarge, "",
						fmt.Sprintf("key and headers take %d bytes, more than %d", keyAndHeadersSize(r), decode.MaxKeyAndHeaderBytes)))
				}
				if err := d.DecodeWith(r.Key, r.Value, r.Timestamp, &e.Fields, scan); err != nil {
					return deadOrWait(e, err)
				}
				return next(e)
			}
		}, nil
	}}
}

// deadOrWait dead-letters e for a *decode.RecordError, or makes it wait
// for a *decode.WaitError.
func deadOrWait(e *Event, err error) Outcome {
	if we, ok := err.(*decode.WaitError); ok {
		e.RetryAt = e.Now.Add(we.RetryAfter)
		return OutcomeDelay
	}
	return e.DeadLetter(err.(*decode.RecordError))
}

// ScoreStage computes Event.Fields.Score.
func ScoreStage(d *decode.Decoder) Stage {
	return Func(StageScore, func(next Handler) Handler {
		return func(e *Event) Outcome {
			if err := d.Score(e.Record.Value, &e.Fields); err != nil {
				return e.DeadLetter(err.(*decode.RecordError))
			}
			return next(e)
		}
	})
}

// DecideStage asks the partition's lane of the event's budget
// (Partition.Lane), which the worker opens on the budget's first event. An
// event of a budget the worker does not have is a bad record
// (ReasonUnknownBudget).
func DecideStage() Stage {
	return Stage{Name: StageDecide, New: func(part *Partition) (Middleware, error) {
		return func(next Handler) Handler {
			return func(e *Event) Outcome {
				l := part.Lane(e)
				if l == nil {
					return e.DeadLetter(recErr(StageDecide, decode.ReasonUnknownBudget, "", strconv.Quote(e.Fields.Budget)))
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
		}, nil
	}}
}

// SplitStage assigns the event's key to experiments. A nil splitter, or an
// event without a key, gets no assignment.
func SplitStage(sp *splitter.Splitter) Stage {
	return Func(StageSplit, func(next Handler) Handler {
		if sp == nil {
			return next
		}
		return func(e *Event) Outcome {
			if e.Fields.Key != "" {
				e.Assignments = sp.Assign(bytesconv.Bytes(e.Fields.Key), e.Assignments)
			}
			return next(e)
		}
	})
}
