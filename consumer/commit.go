package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// unit is what one commit wrote in its unit of work (a transaction, or
// the outputs before an offset commit).
type unit struct {
	now      time.Time
	syncDue  bool                                 // stats and experiment records written
	touched  []*partition                         // partitions that processed records
	cps      []stats.Checkpoint                   // their checkpoints, by touched
	variants []pendingVariants                    // variant counts taken for publication
	held     map[string]map[int32]kgo.EpochOffset // offsets held by delay budgets
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
	t0 := w.cfg.now()
	w.inflight.Wait()
	w.m.commitSeconds.WithLabelValues("wait").Observe(w.cfg.now().Sub(t0).Seconds())
	defer w.sess.allowRebalance()

	parts := w.partitions()
	u := &unit{now: w.cfg.now()}
	u.syncDue = !u.now.Before(w.nextSync)
	for _, p := range parts {
		if p.touched {
			u.touched = append(u.touched, p)
			p.foldVariants()
		}
		p.flushCounts()
	}
	if len(u.touched) == 0 && !u.syncDue {
		return nil
	}
	if err := w.write(u, parts); err != nil {
		return err
	}
	committed, err := w.end(ctx, u)
	if err != nil {
		return err
	}
	w.settle(u, committed)
	if !committed {
		if err := w.rollback(u.touched, u.now); err != nil {
			return err
		}
	}
	w.applyHolds(u.touched, u.held, committed)
	if err := w.sess.begin(); err != nil {
		return err
	}
	if u.syncDue && committed {
		w.nextSync = u.now.Add(w.cfg.syncInterval)
		w.tree.Sync(u.now, viewExchange{w.view})
	}
	return nil
}

// partitions returns the partitions owned now.
func (w *Worker) partitions() []*partition {
	w.mu.Lock()
	defer w.mu.Unlock()
	parts := make([]*partition, 0, len(w.parts))
	for _, p := range w.parts {
		parts = append(parts, p)
	}
	return parts
}

// write produces the unit's records: the stats and experiment records
// when a sync is due, then, per touched partition, its checkpoint and what
// its stages keep (pipeline.State).
func (w *Worker) write(u *unit, parts []*partition) error {
	w.reports = w.tree.Reports(u.now, w.reports[:0])
	if u.syncDue {
		recs, err := w.pub.Records(w.reports)
		if err != nil {
			w.log.Error().Err(err).Msg("encode stats")
		}
		for _, r := range recs {
			w.produce(r)
		}
		u.variants = w.experimentRecords(u.now, parts)
		if r, err := w.statusRecord(u.now, parts); err != nil {
			w.log.Error().Err(err).Msg("encode worker status")
		} else {
			w.produce(r)
		}
	}
	u.cps = make([]stats.Checkpoint, 0, len(u.touched))
	for _, p := range u.touched {
		cp := p.checkpoint(w.reports)
		r, err := stats.CheckpointRecord(w.cfg.topics.Checkpoints, p.id, cp)
		if err != nil {
			return err
		}
		w.produce(r)
		for _, s := range p.kept() {
			for _, r := range s.Flush(u.now) {
				w.produce(r)
			}
		}
		u.cps = append(u.cps, cp)
	}
	u.held = heldOffsets(u.touched)
	return nil
}

// end ends the unit of work: committed unless a produce failed. An abort
// for a failed produce counts towards giving up (see giveUp).
//
// It flushes first, and only then looks for failed produces: a record
// refused while the session's end flushes it would not stop kgo from
// committing the transaction (or the offsets, at least once), and the
// refused record would be lost.
func (w *Worker) end(ctx context.Context, u *unit) (committed bool, err error) {
	if err := w.sess.client().Flush(ctx); err != nil {
		return false, &sessionError{fmt.Errorf("flush: %w", err)}
	}
	ok := w.produceErrs.Load() == 0
	t1 := w.cfg.now()
	committed, err = w.sess.end(ctx, ok, u.held)
	w.m.commitSeconds.WithLabelValues("end").Observe(w.cfg.now().Sub(t1).Seconds())
	if !ok {
		perr := w.produceErr.Load()
		w.log.Warn().Err(*perr).Int64("failed", w.produceErrs.Load()).Msg("produce failed; transaction aborted")
		w.produceErrs.Store(0)
		w.produceErr.Store(nil)
		if err == nil {
			if gerr := w.giveUp(*perr, w.cfg.now()); gerr != nil {
				return false, gerr
			}
		}
	}
	return committed, err
}

// settle makes what the unit wrote the committed state of its partitions
// and stages, or counts the abort (the caller rolls back).
func (w *Worker) settle(u *unit, committed bool) {
	w.settleExperiments(committed, u.variants)
	if !committed {
		w.m.commits.WithLabelValues("aborted").Inc()
		w.status.aborted++
		w.log.Info().Int("partitions", len(u.touched)).Msg("transaction aborted; rolling back")
		return
	}
	w.m.commits.WithLabelValues("committed").Inc()
	w.status.commits++
	for i, p := range u.touched {
		p.committed = u.cps[i]
		p.commitOffset, p.committedAt = u.cps[i].Offset, u.now
		p.touched = false
		for _, s := range p.kept() {
			s.Committed()
		}
	}
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
