package consumer

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// commitRevoked commits, at-least-once, the offsets the revoked
// partitions ps (stopped) have reached: the offset after the last record
// each processed, or its held record (delay budgets). The unit of work
// committed them already, unless the group refused that commit (a
// rebalance in progress); then the partitions' new owners would process
// again every record since the last accepted commit, several commit
// intervals in a long rebalance. The group accepts a commit made while it
// revokes. Only the kill of a worker (or the loss of its session) leaves
// records processed and not committed: the records of its partitions
// since its last accepted commit.
func (w *Worker) commitRevoked(ctx context.Context, cl *kgo.Client, ps []*partition) {
	var offsets map[string]map[int32]kgo.EpochOffset
	for _, p := range ps {
		if p.load != nil || p.nextOffset < 0 {
			continue // never started: nothing processed
		}
		offsets = setOffset(offsets, topicPartition{p.topic, p.id}, kgo.EpochOffset{Epoch: -1, Offset: p.nextOffset})
	}
	if len(offsets) == 0 {
		return
	}
	// The outputs first: the unit of work flushed them, unless it ended
	// early with nothing processed. A produce that failed since the
	// session's last unit of work (whose failure closes the session, and
	// so revokes every partition) leaves the offsets where they are: the
	// records whose outputs were refused are read again.
	err := cl.Flush(ctx)
	if err == nil && (w.produceErrs.Load() > 0 || w.commitFailed.Load()) {
		err = errors.New("an output or a ledger of this session was not written")
	}
	if err == nil {
		err = commitOffsetsSync(ctx, cl, offsets)
	}
	if err != nil {
		w.log.Warn().Err(err).Msg("offsets of revoked partitions not committed; their new owners process the records since the last commit again")
	}
}
