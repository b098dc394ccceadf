package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// producerFenced reports whether err says the session's transactional
// producer can produce no more: its epoch is behind the broker's. That
// happens when a broker restarted after a crash aborts the transactions
// that were open (kfake bumps their epochs), when a transaction timed out
// on the broker, or when another worker started with the same
// transactional id.
func producerFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

// runSessions runs the poll loop. When the session fails (its producer is
// fenced, or its transaction could not be ended or its offsets committed:
// the brokers were unreachable, say), it closes the session (leaving the
// group stops every partition, whose uncommitted work the broker aborts)
// and starts a new one with the same transactional id, which takes the
// producer back: the new assignment resumes from the committed
// ledgers, as after a restart of the process. More than the
// SessionRestarts option's count of failures within its span are fatal
// (fenced each time: another live worker is likely using the same id).
func (w *Worker) runSessions(ctx context.Context) error {
	var recent failures
	for {
		err := w.loop(ctx)
		var se *sessionError
		if err == nil || ctx.Err() != nil || !(producerFenced(err) || errors.As(err, &se)) {
			return err
		}
		if n := recent.add(w.cfg.now(), w.cfg.restartSpan); n > w.cfg.restarts {
			return fmt.Errorf("%w (session failed %d times within %v; fenced: is another worker using transactional id %s?)",
				err, n, w.cfg.restartSpan, w.cfg.txnID)
		}
		w.log.Warn().Err(err).Str("transactional_id", w.cfg.txnID).
			Msg("session failed (producer fenced, or brokers unreachable at its end): starting a new session")
		if err := w.restartSession(ctx); err != nil {
			return err
		}
	}
}

// failures are the instants sessions failed at, within the restart span.
type failures struct{ at []time.Time }

// add records a failure at now and returns how many there were within
// span of now, this one included.
func (f *failures) add(now time.Time, span time.Duration) int {
	kept := f.at[:0]
	for _, at := range f.at {
		if now.Sub(at) < span {
			kept = append(kept, at)
		}
	}
	f.at = append(kept, now)
	return len(f.at)
}

// restartSession replaces the session with a new one.
func (w *Worker) restartSession(ctx context.Context) error {
	_ = w.drainCommitter() // the session failed already: its error is moot
	w.sess.close()
	w.closeAll()
	// The old client's buffered records failed on close: not this
	// session's concern.
	w.produceErrs.Store(0)
	w.produceErr.Store(nil)
	w.commitFailed.Store(false)
	select { // a new session either way: Run closes it
	case <-ctx.Done():
	case <-time.After(w.cfg.restartPause):
	}
	sess, err := w.newSession()
	if err != nil {
		return err
	}
	w.sess = sess
	w.clientPt.Store(sess.client())
	if err := sess.begin(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if w.cfg.delivery == ExactlyOnce {
		w.settleOwnHangs(ctx)
	}
	return nil
}

// A produce error that kgo returns has outlived its retries: the broker
// refuses the record for good (too large, not authorized, no such topic).
// Retrying the same records aborts every transaction, so a worker whose
// transactions keep aborting for failed produces — at least the GiveUp
// option's aborts over at least its window, with no pause of the window
// between two — stops with the error instead of looping. Transactions that commit
// meanwhile (partitions without a refused record) do not reset the count:
// the partition that holds the refused record cannot move on. Nothing is
// lost: no offset of a refused record was committed.

// giveUp counts a transaction aborted for perr and returns a fatal error
// once the aborts in a row pass both bounds.
func (w *Worker) giveUp(perr error, now time.Time) error {
	window := w.cfg.giveUpAfter
	if w.aborts == 0 || now.Sub(w.lastAbort) > window {
		w.aborts, w.abortsSince = 0, now
	}
	w.aborts++
	w.lastAbort = now
	if w.aborts < w.cfg.giveUpAborts || now.Sub(w.abortsSince) < window {
		return nil
	}
	return fmt.Errorf("producing failed in %d aborted transactions over %v, giving up (the records are not committed and will be read again after a restart): %w",
		w.aborts, now.Sub(w.abortsSince).Round(time.Second), perr)
}
