package pipeline

import (
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/splitter"
)

// Router names the topics events go to, and is the one place that picks
// an event's destination.
type Router struct {
	Output     string // passed events not routed to a variant topic
	Rejected   string // rejected events; "" drops them
	DeadLetter string // bad records
}

// route sets e.Topic for an event that ended with o, and returns the
// final outcome:
//
//   - a pass goes to the topic of its first experiment assignment
//     (splitter.Route), or to Output when it has none or a variant limit
//     refused it (Event.VariantLimited); with no topic at all it is a
//     dead letter (ReasonNoDestination);
//   - a reject goes to Rejected ("" : dropped and counted);
//   - a dead letter goes to DeadLetter;
//   - a drop or a delay goes nowhere;
//   - any other outcome is a dead letter (ReasonUnexplained).
//
// The pipeline's last handler routes the passes, so that every stage sees
// the outcome a pass finally has; Chain.Run routes the rest.
func (r Router) route(e *Event, o Outcome) Outcome {
	switch o {
	case OutcomePass:
		e.Topic = r.Output
		if t, ok := splitter.Route(e.Assignments); ok && t != "" && !e.VariantLimited {
			e.Topic = t
		}
		if e.Topic != "" {
			return o
		}
		e.Err = recErr(StageRoute, decode.ReasonNoDestination, "", "")
	case OutcomeReject:
		e.Topic = r.Rejected
		return o
	case OutcomeDrop, OutcomeDelay:
		e.Topic = ""
		return o
	case OutcomeDeadLetter:
	default:
		if e.Err == nil {
			e.Err = recErr("pipeline", decode.ReasonUnexplained, "", "outcome "+o.String())
		}
	}
	e.Topic = r.DeadLetter
	return OutcomeDeadLetter
}
