package consumer

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// committer writes an at-least-once unit of work's ledgers once the
// unit's outputs are acknowledged, then commits its offsets, while the
// poll loop goes on with the next unit (writeAhead).
type committer struct {
	// prev is the committer of the unit before, until this one is done
	prev atomic.Pointer[committer]
	done chan struct{}
	err  error // set before done closes
}

// writeAhead is write and end at least once, for a unit without delay
// holds or definitions: the flush of the outputs, the ledgers and the
// offsets overlap the next unit's processing instead of holding the
// partitions idle. It produces what the unit's stages keep and, at a
// sync, the worker's status, closes the unit's acks (the next unit's
// records are counted apart), computes the ledger records and the
// offsets now, while the partitions are idle, and leaves the rest to a
// committer goroutine: once every record of the unit is acknowledged,
// none failed and the committer of the unit before is done, it produces
// the ledgers, waits for them, and commits the offsets (asynchronously:
// plainSession). A ledger thus never counts an
// output not written, as in write.
//
// The unit is settled as committed at once. A committer that fails
// (a produce refused, the brokers unreachable for shutdownTimeout) fails
// the session at the next commit (settleCommitters): the session starts
// again from the ledgers written, and the records after them are read
// again, as at least once allows.
func (w *Worker) writeAhead(u *unit, parts []*partition) error {
	w.produceKept(u)
	w.produceStatus(u, parts)
	outputs := w.acks.Swap(newUnitAcks(w.produced))
	recs, err := w.unitLedgers(parts, u)
	if err != nil {
		return err
	}
	sess := w.sess.(plainSession)
	offsets := mergeOffsets(sess.cl.UncommittedOffsets(), w.ahead.commitOffsets(nil))
	c := &committer{done: make(chan struct{})}
	prev := w.committing.Swap(c)
	c.prev.Store(prev)
	go func() {
		defer close(c.done)
		c.err = w.commitAhead(sess, outputs, recs, offsets, prev)
		c.prev.Store(nil)
		if c.err != nil {
			w.commitFailed.Store(true)
		}
	}()
	return nil
}

// commitAhead is the committer's work (writeAhead): prev is the committer
// of the unit before, if any, which writes its ledgers and commits its
// offsets first.
func (w *Worker) commitAhead(sess plainSession, outputs *unitAcks, ledgers []*kgo.Record, offsets map[string]map[int32]kgo.EpochOffset, prev *committer) error {
	acked := outputs.wait(shutdownTimeout)
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			return prev.err
		}
	}
	if err := sess.commits.failed(); err != nil {
		return &sessionError{fmt.Errorf("commit offsets: %w", err)}
	}
	failed := func() error {
		if w.produceErrs.Load() == 0 {
			return nil
		}
		if perr := w.produceErr.Load(); perr != nil {
			return &sessionError{fmt.Errorf("%w: %w", errCannotAbort, *perr)}
		}
		return &sessionError{errCannotAbort}
	}
	if !acked {
		return &sessionError{fmt.Errorf("flush: outputs not acknowledged within %v", shutdownTimeout)}
	}
	if err := failed(); err != nil {
		return err
	}
	acks := newUnitAcks(w.produced)
	for _, r := range ledgers {
		acks.produce(w.prodCtx, sess.cl, r)
	}
	if !acks.wait(shutdownTimeout) {
		return &sessionError{fmt.Errorf("flush: ledgers not acknowledged within %v", shutdownTimeout)}
	}
	if err := failed(); err != nil {
		return err
	}
	sess.commitAsync(offsets)
	return nil
}

// settleCommitters waits for the committers of the units of work before
// the last one, and returns the first error of one done (which fails the
// session). The last unit's committer may go on while the next unit is
// processed, and the one after it is written (writeAhead): one unit
// earlier than that, its outputs' acknowledgements and its ledgers' round
// trip held the partitions idle at every commit. With partitions parked it
// waits for every committer, as drainCommitter: restoring a parked
// partition reads the ledgers written.
func (w *Worker) settleCommitters() error {
	c := w.committing.Load()
	if c == nil {
		return nil
	}
	w.parks.mu.Lock()
	parked := len(w.parks.parts) > 0
	w.parks.mu.Unlock()
	if parked {
		return w.drainCommitter()
	}
	if p := c.prev.Load(); p != nil {
		<-p.done
		if p.err != nil {
			return p.err
		}
	}
	select {
	case <-c.done:
		w.committing.CompareAndSwap(c, nil)
		return c.err
	default:
		return nil
	}
}

// drainCommitter waits for the committer of the last unit of work, if
// any, and returns its error.
func (w *Worker) drainCommitter() error {
	if c := w.committing.Swap(nil); c != nil {
		<-c.done
		return c.err
	}
	return nil
}

// awaitCommitter waits for the committer of the last unit of work, if
// any, leaving its error to the poll loop (a revoke: the offsets it
// commits must not be ahead of the ledgers).
func (w *Worker) awaitCommitter() {
	if c := w.committing.Load(); c != nil {
		<-c.done
	}
}
