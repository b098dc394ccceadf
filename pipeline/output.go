package pipeline

import (
	"strconv"

	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Header keys the worker adds to the records it writes.
//
// Every output and rejected record carries throttler-decision and
// throttler-budget; a rejected record also carries throttler-reason. A
// passed event assigned to experiments carries, for each assignment in
// layer order, throttler-layer, throttler-experiment, throttler-variant and
// throttler-scheme, the experiment's hash scheme (throttler, growthbook,
// optimizely, statsig or unleash: see splitter.Schemes). Kafka allows
// repeated keys; the n-th of each belongs together. Scored events carry
// throttler-score.
//
// A dead-lettered record carries throttler-decision: dead-letter,
// throttler-stage, throttler-reason, throttler-error and the position of the
// source record: throttler-source-topic, -partition, -offset.
//
// The source record's own headers come first, then these, then the ones
// stages added with Event.AddHeader.
const (
	HeaderDecision        = "throttler-decision"
	HeaderReason          = "throttler-reason"
	HeaderBudget          = "throttler-budget"
	HeaderScore           = "throttler-score"
	HeaderLayer           = "throttler-layer"
	HeaderExperiment      = "throttler-experiment"
	HeaderVariant         = "throttler-variant"
	HeaderScheme          = "throttler-scheme"
	HeaderError           = "throttler-error"
	HeaderStage           = "throttler-stage"
	HeaderSourceTopic     = "throttler-source-topic"
	HeaderSourcePartition = "throttler-source-partition"
	HeaderSourceOffset    = "throttler-source-offset"
	// HeaderOriginalSize is on a dead letter whose value was cut to the
	// decoder's maximum record size (reason too_large): the size of the
	// source value, which stays whole at its source offset.
	HeaderOriginalSize = "throttler-original-size"
)

// Values of HeaderDecision.
const (
	DecisionPass       = "pass"
	DecisionReject     = "reject"
	DecisionDeadLetter = "dead-letter"
)

var (
	valPass       = []byte(DecisionPass)
	valReject     = []byte(DecisionReject)
	valDeadLetter = []byte(DecisionDeadLetter)
)

// OutputRecord builds the record written for an event with outcome o to
// its topic (Event.Topic). scored adds the score header. The record and
// its headers are allocated for it; the worker's partitions use
// Records.Output instead.
func OutputRecord(e *Event, o Outcome, scored bool) *kgo.Record {
	h := make([]kgo.RecordHeader, 0, headerCount(e, o, scored))
	return fillOutput(new(kgo.Record), h, e, o, scored)
}

// headerCount returns the number of headers of e's output record.
func headerCount(e *Event, o Outcome, scored bool) int {
	n := len(e.Record.Headers) + len(e.Headers) + 3
	switch o {
	case OutcomePass:
		n += 4 * len(e.Assignments)
	case OutcomeDeadLetter:
		n += 4
	}
	if scored {
		n++
	}
	return n
}

// fillOutput sets out, a zero record, to e's output record with headers
// appended to h, which has room for headerCount's.
func fillOutput(out *kgo.Record, h []kgo.RecordHeader, e *Event, o Outcome, scored bool) *kgo.Record {
	src := e.Record
	if len(src.Headers) > 0 {
		h = append(h, src.Headers...)
	}
	switch o {
	case OutcomePass:
		h = append(h,
			kgo.RecordHeader{Key: HeaderDecision, Value: valPass},
			kgo.RecordHeader{Key: HeaderBudget, Value: bytesconv.Bytes(e.Fields.Budget)})
		if scored {
			h = append(h, kgo.RecordHeader{Key: HeaderScore, Value: strconv.AppendFloat(nil, e.Fields.Score, 'g', -1, 64)})
		}
		for _, a := range e.Assignments {
			h = append(h,
				kgo.RecordHeader{Key: HeaderLayer, Value: bytesconv.Bytes(a.Layer)},
				kgo.RecordHeader{Key: HeaderExperiment, Value: bytesconv.Bytes(a.Experiment)},
				kgo.RecordHeader{Key: HeaderVariant, Value: bytesconv.Bytes(a.Variant)},
				kgo.RecordHeader{Key: HeaderScheme, Value: bytesconv.Bytes(a.Scheme)})
		}
	case OutcomeReject:
		h = append(h,
			kgo.RecordHeader{Key: HeaderDecision, Value: valReject},
			kgo.RecordHeader{Key: HeaderReason, Value: bytesconv.Bytes(e.RejectReason)},
			kgo.RecordHeader{Key: HeaderBudget, Value: bytesconv.Bytes(e.RejectedBy)})
		if scored {
			h = append(h, kgo.RecordHeader{Key: HeaderScore, Value: strconv.AppendFloat(nil, e.Fields.Score, 'g', -1, 64)})
		}
	case OutcomeDeadLetter:
		err := e.Err
		h = append(h,
			kgo.RecordHeader{Key: HeaderDecision, Value: valDeadLetter},
			kgo.RecordHeader{Key: HeaderStage, Value: []byte(err.Stage)},
			kgo.RecordHeader{Key: HeaderReason, Value: []byte(err.Reason)},
			kgo.RecordHeader{Key: HeaderError, Value: []byte(err.Error())},
			kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(src.Topic)},
			kgo.RecordHeader{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(src.Partition), 10)},
			kgo.RecordHeader{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, src.Offset, 10)})
	}
	if len(e.Headers) > 0 {
		h = append(h, e.Headers...)
	}
	return setOutput(out, h, e)
}

// setOutput sets out, a zero record, to e's output record with headers h.
func setOutput(out *kgo.Record, h []kgo.RecordHeader, e *Event) *kgo.Record {
	// Field by field: out is zero, and a whole-struct copy would pay a
	// write barrier on every pointer slot of the record while the GC
	// marks.
	src := e.Record
	out.Topic = e.Topic
	out.Key = src.Key
	out.Value = src.Value
	out.Headers = h
	out.Timestamp = src.Timestamp
	return out
}

// HeaderValue returns the value of the first header named key, and whether
// there is one. For consumers of the output topics and tests.
func HeaderValue(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}
