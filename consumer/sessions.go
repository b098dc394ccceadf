package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Session restarts after a failed session (see runSessions).
const (
	maxFencedRestarts  = 5
	fencedRestartSpan  = 5 * time.Minute
	fencedRestartPause = time.Second
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
// checkpoints, as after a restart of the process. More than
// maxFencedRestarts failures within fencedRestartSpan are fatal (fenced
// each time: another live worker is likely using the same id).
func (w *Worker) runSessions(ctx context.Context) error {
	var recent []time.Time
	for {
		err := w.loop(ctx)
		var se *sessionError
		if err == nil || ctx.Err() != nil || !(producerFenced(err) || errors.As(err, &se)) {
			return err
		}
		now := time.Now()
		kept := recent[:0]
		for _, at := range recent {
			if now.Sub(at) < fencedRestartSpan {
				kept = append(kept, at)
			}
		}
		recent = append(kept, now)
		if len(recent) > maxFencedRestarts {
			return fmt.Errorf("%w (session failed %d times within %v; fenced: is another worker using transactional id %s?)",
				err, len(recent), fencedRestartSpan, w.cfg.txnID)
		}
		w.log.Warn().Err(err).Str("transactional_id", w.cfg.txnID).
			Msg("session failed (producer fenced, or brokers unreachable at its end): starting a new session")
		if err := w.restartSession(ctx); err != nil {
			return err
		}
	}
}

// restartSession replaces the session with a new one.
func (w *Worker) restartSession(ctx context.Context) error {
	w.sess.close()
	w.closeAll()
	// The old client's buffered records failed on close: not this
	// session's concern.
	w.produceErrs.Store(0)
	w.produceErr.Store(nil)
	select { // a new session either way: Run closes it
	case <-ctx.Done():
	case <-time.After(fencedRestartPause):
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
	return nil
}
