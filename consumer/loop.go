package consumer

import (
	"context"
)

// loop polls (ahead: see pollAhead), dispatches batches of at most
// DefaultMaxPollRecords to partition goroutines and commits every commit
// interval or DefaultCommitRecords records. On ctx's end it commits what was
// processed and returns.
func (w *Worker) loop(ctx context.Context) error {
	w.ahead = pollAhead{} // a new session: nothing polled yet
	now := w.cfg.now()
	nextCommit := now.Add(w.cfg.commitInterval)
	w.nextSync = now
	pending := 0
	for ctx.Err() == nil {
		// The deadline is an instant of the worker's clock; the poll's
		// context runs on the real one, so it gets the time left.
		if len(w.ahead.queue) == 0 {
			pctx, cancel := context.WithTimeout(ctx, w.pollDeadline(nextCommit).Sub(w.cfg.now()))
			open := w.fill(pctx)
			cancel()
			if !open {
				break
			}
		}
		pending += w.dispatch(DefaultMaxPollRecords)
		if now = w.cfg.now(); !now.Before(nextCommit) || pending >= DefaultCommitRecords {
			if err := w.commit(); err != nil {
				return err
			}
			pending = 0
			nextCommit = w.cfg.now().Add(w.cfg.commitInterval)
		}
	}
	// Shutdown: commit what was processed, and wait for its ledgers.
	if err := w.commit(); err != nil {
		return err
	}
	return w.drainCommitter()
}
