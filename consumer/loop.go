package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

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
		pctx, cancel := context.WithDeadline(ctx, w.pollDeadline(nextCommit))
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
		p.lag.Set(float64(max(ftp.HighWatermark-last.Offset-1, 0)))
		n += len(ftp.Records)
		w.inflight.Add(1)
		p.in <- batch{recs: ftp.Records, now: now}
	})
	return n
}

// commit waits for every partition to go idle, writes the stats records
// (every sync interval) and one checkpoint per touched partition, and ends
// the unit of work. An aborted transaction rolls every touched partition
// back to its committed checkpoint. It then lets a pending rebalance
// proceed.
//
// The commit has a context of its own, not the loop's: a transaction's end
// must not be interrupted by a shutdown (kgo leaves the client in an
// invalid state), so a shutdown waits for it, at most shutdownTimeout.
func (w *Worker) commit() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	t0 := time.Now()
	w.inflight.Wait()
	w.m.commitSeconds.WithLabelValues("wait").Observe(time.Since(t0).Seconds())
	defer w.sess.allowRebalance()

	w.mu.Lock()
	parts := make([]*partition, 0, len(w.parts))
	for _, p := range w.parts {
		parts = append(parts, p)
	}
	w.mu.Unlock()

	now := w.cfg.now()
	syncDue := !now.Before(w.nextSync)
	var touched []*partition
	for _, p := range parts {
		if p.touched {
			touched = append(touched, p)
			p.foldVariants()
		}
		p.counts.flush(w.m, p.tab.names)
	}
	if len(touched) == 0 && !syncDue {
		return nil
	}

	w.reports = w.tree.Reports(now, w.reports[:0])
	if syncDue {
		recs, err := w.pub.Records(w.reports)
		if err != nil {
			w.log.Error().Err(err).Msg("encode stats")
		}
		for _, r := range recs {
			w.produce(r)
		}
	}
	var variants []pendingVariants
	if syncDue {
		variants = w.experimentRecords(now, parts)
	}
	cps := make([]checkpointState, 0, len(touched))
	for _, p := range touched {
		cp := p.checkpoint(w.reports)
		r, err := checkpointRecord(w.cfg.topics.Checkpoints, p.id, cp)
		if err != nil {
			return err
		}
		w.produce(r)
		if err := w.writeCaps(p, now); err != nil {
			return err
		}
		cps = append(cps, checkpointState{p, cp})
	}

	// A produce error reaches onProduced when the broker answers, which
	// may be after this point; kgo commits a transaction whose records
	// failed if asked to. After a flush every record has been answered.
	if err := w.sess.client().Flush(ctx); err != nil {
		return &sessionError{fmt.Errorf("flush: %w", err)}
	}
	ok := w.produceErrs.Load() == 0
	t1 := time.Now()
	held := heldOffsets(touched)
	committed, err := w.sess.end(ctx, ok, held)
	w.m.commitSeconds.WithLabelValues("end").Observe(time.Since(t1).Seconds())
	if !ok {
		perr := w.produceErr.Load()
		w.log.Warn().Err(*perr).Int64("failed", w.produceErrs.Load()).Msg("produce failed; transaction aborted")
		w.produceErrs.Store(0)
		w.produceErr.Store(nil)
		if err == nil {
			if gerr := w.giveUp(*perr, w.cfg.now()); gerr != nil {
				return gerr
			}
		}
	}
	if err != nil {
		return err
	}
	w.settleExperiments(committed, variants)
	if committed {
		w.m.commits.WithLabelValues("committed").Inc()
		for _, c := range cps {
			c.p.committed = c.cp
			c.p.touched = false
			c.p.capsCommitted()
		}
	} else {
		w.m.commits.WithLabelValues("aborted").Inc()
		w.log.Info().Int("partitions", len(touched)).Msg("transaction aborted; rolling back")
		if err := w.rollback(touched, now); err != nil {
			return err
		}
	}
	w.applyHolds(touched, held, committed)
	if err := w.sess.begin(); err != nil {
		return err
	}
	if syncDue && committed {
		w.nextSync = now.Add(w.cfg.syncInterval)
		w.tree.Sync(now, viewExchange{w.view})
	}
	return nil
}

type checkpointState struct {
	p  *partition
	cp checkpointValue
}

// rollback returns the touched partitions that are still assigned to their
// committed checkpoints. It holds w.mu so that a revoke running meanwhile
// (see txnSession.end) either sees a partition rolled back or stops it
// first; a stopped partition is not reopened.
func (w *Worker) rollback(touched []*partition, now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range touched {
		if w.parts[topicPartition{p.topic, p.id}] != p {
			continue // revoked or lost during the commit
		}
		if err := p.rollback(now); err != nil {
			return err
		}
	}
	return nil
}

// A produce error that kgo returns has outlived its retries: the broker
// refuses the record for good (too large, not authorized, no such topic).
// Retrying the same records aborts every transaction, so a worker whose
// transactions keep aborting for failed produces — at least giveUpAborts
// of them over at least giveUpAfter, with no pause of giveUpAfter between
// two — stops with the error instead of looping. Transactions that commit
// meanwhile (partitions without a refused record) do not reset the count:
// the partition that holds the refused record cannot move on. Nothing is
// lost: no offset of a refused record was committed.
const (
	giveUpAborts = 10
	giveUpAfter  = 10 * time.Second
)

// giveUp counts a transaction aborted for perr and returns a fatal error
// once the aborts in a row pass both bounds.
func (w *Worker) giveUp(perr error, now time.Time) error {
	if w.aborts == 0 || now.Sub(w.lastAbort) > giveUpAfter {
		w.aborts, w.abortsSince = 0, now
	}
	w.aborts++
	w.lastAbort = now
	if w.aborts < giveUpAborts || now.Sub(w.abortsSince) < giveUpAfter {
		return nil
	}
	return fmt.Errorf("producing failed in %d aborted transactions over %v, giving up (the records are not committed and will be read again after a restart): %w",
		w.aborts, now.Sub(w.abortsSince).Round(time.Second), perr)
}
