package consumer

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// loop polls, dispatches batches to partition goroutines and commits every
// commit interval or commit-records records. On ctx's end it commits what
// was processed and returns.
func (w *Worker) loop(ctx context.Context) error {
	now := w.cfg.now()
	nextCommit := now.Add(w.cfg.commitInterval)
	w.nextSync = now
	pending := 0
	for ctx.Err() == nil {
		// The deadline is an instant of the worker's clock; the poll's
		// context runs on the real one, so it gets the time left.
		pctx, cancel := context.WithTimeout(ctx, w.pollDeadline(nextCommit).Sub(w.cfg.now()))
		fs := w.sess.poll(pctx, w.cfg.maxPollRecords)
		cancel()
		if fs.IsClientClosed() {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			w.log.Warn().Err(err).Str("topic", t).Int32("partition", p).Msg("fetch error")
		})
		pending += w.dispatch(fs)
		if now = w.cfg.now(); !now.Before(nextCommit) || pending >= w.cfg.commitRecords {
			if err := w.commit(); err != nil {
				return err
			}
			pending = 0
			nextCommit = w.cfg.now().Add(w.cfg.commitInterval)
		}
	}
	// Shutdown: commit what was processed.
	return w.commit()
}

// dispatch hands each partition's records to its goroutine and returns the
// number of records.
func (w *Worker) dispatch(fs kgo.Fetches) int {
	n := 0
	now := w.cfg.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) == 0 {
			return
		}
		p := w.parts[topicPartition{ftp.Topic, ftp.Partition}]
		if p == nil {
			// Fetched before a revoke took effect: not ours any more.
			return
		}
		last := ftp.Records[len(ftp.Records)-1]
		p.lagRecords = max(ftp.HighWatermark-last.Offset-1, 0)
		p.lag.Set(float64(p.lagRecords))
		n += len(ftp.Records)
		w.inflight.Add(1)
		p.in <- batch{recs: ftp.Records, now: now}
	})
	return n
}
