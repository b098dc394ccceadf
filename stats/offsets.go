package stats

import (
	"context"
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
// started while the cluster rolls waits for it instead of exiting). A
// topic the metadata does not list at all (partition -1) is answered at
// once.
func ListSettled(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) (kadm.ListedOffsets, error) {
	backoff := firstBackoff
	for {
		listed, err := list(ctx, topic)
		if err != nil || !unsettled(listed[topic]) || !pause(ctx, &backoff) {
			return listed, err
		}
	}
}

// unsettled reports whether a listed partition has an error that asking
// again may clear.
func unsettled(parts map[int32]kadm.ListedOffset) bool {
	for p, o := range parts {
		if p >= 0 && kerr.IsRetriable(o.Err) { // UNKNOWN_TOPIC_OR_PARTITION is retriable
			return true
		}
	}
	return false
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
