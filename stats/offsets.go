package stats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ListSettled lists topic's offsets with list (a kadm.Client's
// ListStartOffsets, ListEndOffsets or ListCommittedOffsets), asking again
// while a partition the metadata lists answers with a retriable error or
// does not know the topic: on a cluster of several brokers a partition's
// leader learns of a topic just created, and of its leadership, from the
// controller in its own time, after another broker has listed it, and a
// partition whose leader stopped has none until another takes it over,
// which a loaded cluster may take a minute to do. It asks until ctx ends,
// and then returns the last answer: the caller bounds the wait (a
// command-line tool by its timeout, a worker by its run, so that a worker
// started while the cluster rolls waits for it instead of exiting).
//
// A retriable error for the whole topic (partition -1: the metadata
// answer does not list the topic) is asked again for missingTries answers
// (about 2.5 s), since the metadata goes to any one broker and a broker
// that is coming back answers from its own image, which may not hold the
// topic yet; a topic that stays unknown that long is missing, and its
// answer is returned for the caller to say so.
//
// The same holds for a request kadm could not send for some partitions
// (a *kadm.ShardErrors whose every error is retriable: the client's
// metadata knows no leader for them yet); once ctx ends that error is
// returned. Any other error of list is returned at once.
//
// waiting, when not nil, is called with the newest unsettled answer (a
// *TopicError naming a partition and its error) after waitFirst answers
// in a row were unsettled (about 4.5 s), then after every waitEvery more
// (about 10 s), for the caller to log.
func ListSettled(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string, waiting func(error)) (kadm.ListedOffsets, error) {
	backoff := firstBackoff
	for tries := 1; ; tries++ {
		listed, err := list(ctx, topic)
		what, perr := "", err
		switch {
		case err == nil:
			var p int32
			if p, perr = unsettled(listed[topic]); perr == nil || (p == -1 && tries >= missingTries) {
				return listed, nil
			}
			what = fmt.Sprintf("partition %d", p)
		case retriableShards(err):
			what = "partitions without a known leader"
		default:
			return listed, err
		}
		if waiting != nil && tries >= waitFirst && (tries-waitFirst)%waitEvery == 0 {
			waiting(&TopicError{Topic: topic, Op: fmt.Sprintf("%s still unavailable after %d answers", what, tries), Err: perr})
		}
		if !pause(ctx, &backoff) {
			return listed, err
		}
	}
}

// retriableShards reports whether err is kadm's *ShardErrors with only
// errors that asking again may clear.
func retriableShards(err error) bool {
	se, ok := errors.AsType[*kadm.ShardErrors](err)
	if !ok || len(se.Errs) == 0 {
		return false
	}
	for _, e := range se.Errs {
		if !kerr.IsRetriable(e.Err) {
			return false
		}
	}
	return true
}

// The answers after which ListSettled reports a wait: the pauses between
// them (pause) come to about 4.5 s for the first waitFirst, then a second
// each.
const (
	waitFirst = 8
	waitEvery = 10
)

// missingTries is how many answers in a row ListSettled asks for a topic
// the metadata does not list before it returns: with pause's doubling
// they span about 2.5 s.
const missingTries = 7

// unsettled returns a listed partition (-1: the whole topic) with an
// error that asking again may clear, and that error (nil: none).
func unsettled(parts map[int32]kadm.ListedOffset) (int32, error) {
	for p, o := range parts {
		if kerr.IsRetriable(o.Err) { // UNKNOWN_TOPIC_OR_PARTITION is retriable
			return p, o.Err
		}
	}
	return 0, nil
}

// firstBackoff is the first pause of pause's callers.
const firstBackoff = 50 * time.Millisecond

// pause waits *d, or until ctx ends (false), and doubles *d up to a
// second: the pause between the tries of a request a broker may answer
// better soon.
func pause(ctx context.Context, d *time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*d):
	}
	*d = min(2**d, time.Second)
	return true
}
