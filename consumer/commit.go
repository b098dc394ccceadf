package consumer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unit is what one commit wrote in its unit of work (a transaction, or
// the outputs before an offset commit).
type unit struct {
	now     time.Time
	syncDue bool                                 // heartbeats, the worker's status and a Sync
	touched []*partition                         // partitions that processed records
	written []*partition                         // partitions that wrote ledger records
	defs    defsTaken                            // definitions written (experiments.go)
	held    map[string]map[int32]kgo.EpochOffset // offsets held by delay budgets
}

// commit waits for every partition to go idle, writes, per partition,
// its ledger records (what changed, or a heartbeat every sync interval)
// and what its stages keep, and ends the unit of work. An aborted
// transaction rolls every touched partition back to its committed ledger.
// It then lets a pending rebalance proceed; after a sync it releases the
// partitions' idle lanes and has the tuner goroutine re-tune from the
// stats view.
//
// The commit has a context of its own, not the loop's: a transaction's end
// must not be interrupted by a shutdown (kgo leaves the client in an
// invalid state), so a shutdown waits for it, at most shutdownTimeout.
func (w *Worker) commit() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	t0 := w.cfg.now()
	w.inflight.Wait()
	// The ledgers and offsets of the units before first: ledgers are
	// written in the order of their units. At least once, the last
	// unit's committer may go on beside this one's (settleCommitters).
	err := w.settleCommitters()
	w.m.commitSeconds.WithLabelValues("wait").Observe(w.cfg.now().Sub(t0).Seconds())
	defer w.sess.allowRebalance()
	if err != nil {
		return err
	}
	w.retryParked(w.cfg.now())

	parts := w.partitions()
	u := &unit{now: w.cfg.now()}
	u.syncDue = !u.now.Before(w.nextSync)
	w.eachOwned(parts, func(p *partition) {
		if p.touched {
			u.touched = append(u.touched, p)
			p.foldVariants()
		}
		p.flushCounts()
	})
	if len(u.touched) == 0 && !u.syncDue && !w.defs.due() {
		return nil
	}
	u.held = heldOffsets(u.touched)
	committed := true
	if w.cfg.delivery == AtLeastOnce && u.held == nil && !w.defs.due() {
		if err := w.writeAhead(u, parts); err != nil {
			return err
		}
	} else {
		if err := w.drainCommitter(); err != nil {
			return err
		}
		if err := w.write(ctx, u, parts); err != nil {
			return err
		}
		if committed, err = w.end(ctx, u); err != nil {
			return err
		}
	}
	w.settle(u, committed)
	if rewind := w.ahead.ended(committed, u.held); rewind != nil {
		w.sess.client().SetOffsets(rewind)
	}
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
		lanes := 0
		w.eachOwned(parts, func(p *partition) {
			if p.ready.Load() {
				p.release(u.now)
				lanes += p.src.Len()
			}
		})
		w.m.openLanes.Set(float64(lanes))
		w.requestSync(u.now)
	}
	return nil
}

// requestSync asks the tuner goroutine for a Sync at now: it reads the
// peers of every controller visited busy since the last one, which costs
// O(active budgets) and would hold up the loop (nothing is dispatched
// meanwhile) were it run here. A request not taken yet is replaced.
func (w *Worker) requestSync(now time.Time) {
	for {
		select {
		case w.syncReq <- now:
			return
		default:
		}
		select {
		case <-w.syncReq: // the tuner is busy: this one replaces it
		default:
		}
	}
}

// eachOwned calls fn, under w.mu, for each of ps the worker still owns. A
// revoke stops a partition only once it is no longer owned (onRevoked), so
// fn never meets a partition being stopped: the final commit at shutdown,
// and the end of a transaction that takes long (txnSession.end), run with
// rebalances allowed.
func (w *Worker) eachOwned(ps []*partition, fn func(*partition)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range ps {
		if w.parts[topicPartition{p.topic, p.id}] == p {
			fn(p)
		}
	}
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

// write produces the unit's records: per touched partition what its
// stages keep (pipeline.State), per started partition its ledger records,
// and the definitions due; at a sync, the worker's status.
//
// At least once, nothing is taken back: the outputs and the stages'
// records are flushed first and the ledgers written after, so that a ledger
// (and the offset it carries) never counts an output that was not
// written. A partition whose ledger is ahead of the group's offset (a
// crash, or an offset commit still in flight: plainSession) then skips
// the records in between (partition.start).
func (w *Worker) write(ctx context.Context, u *unit, parts []*partition) error {
	w.produceKept(u)
	if w.cfg.delivery == AtLeastOnce {
		if err := w.sess.client().Flush(ctx); err != nil {
			return &sessionError{fmt.Errorf("flush: %w", err)}
		}
		if w.produceErrs.Load() > 0 {
			return nil // end fails the unit: nothing more is written
		}
	}
	recs, err := w.unitLedgers(parts, u)
	if err != nil {
		return err
	}
	for _, r := range recs {
		w.produce(r)
	}
	u.defs = w.definitionRecords(u.now)
	w.produceStatus(u, parts)
	return nil
}

// produceKept produces what the stages of the unit's touched partitions
// keep (pipeline.State).
func (w *Worker) produceKept(u *unit) {
	w.eachOwned(u.touched, func(p *partition) {
		for _, s := range p.kept() {
			for _, r := range s.Flush(u.now) {
				w.produce(r)
			}
		}
	})
}

// produceStatus produces the worker's status, at a sync.
func (w *Worker) produceStatus(u *unit, parts []*partition) {
	if !u.syncDue {
		return
	}
	if r, err := w.statusRecord(u.now, parts); err != nil {
		w.log.Error().Err(err).Msg("encode worker status")
	} else {
		w.produce(r)
	}
}

// unitLedgers returns the unit's ledger records (see ledgers) and notes
// in u.written the partitions that wrote some.
func (w *Worker) unitLedgers(parts []*partition, u *unit) ([]*kgo.Record, error) {
	var recs []*kgo.Record
	for _, l := range w.ledgers(parts, u) {
		if l.err != nil {
			return nil, fmt.Errorf("ledger of %s: %w", l.p.source, l.err)
		}
		if len(l.recs) > 0 {
			u.written = append(u.written, l.p)
			recs = append(recs, l.recs...)
		}
	}
	return recs, nil
}

// ledgerOut is one partition's ledger records for a unit of work.
type ledgerOut struct {
	p    *partition
	recs []*kgo.Record
	err  error
}

// ledgers returns the ledger records of the partitions of ps still owned
// and started (not loading their ledger), in ps's order. They are
// computed on up to GOMAXPROCS goroutines, a partition on one: the
// partitions are idle, and a ledger's records (a report per budget that
// changed there: with many budgets, about one per record processed) are
// otherwise the longest part of a commit on the loop. w.mu is held
// throughout, as eachOwned holds it.
func (w *Worker) ledgers(ps []*partition, u *unit) []ledgerOut {
	w.mu.Lock()
	defer w.mu.Unlock()
	var outs []ledgerOut
	for _, p := range ps {
		if w.parts[topicPartition{p.topic, p.id}] == p && p.ready.Load() {
			outs = append(outs, ledgerOut{p: p})
		}
	}
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(outs); i = int(next.Add(1) - 1) {
			o := &outs[i]
			o.recs, o.err = o.p.ledgerRecords(u.now, u.syncDue)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(outs)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return outs
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
	offsets := w.ahead.commitOffsets(u.held)
	recommit := w.cfg.delivery == ExactlyOnce && w.shortestDelay.Load() > 0
	if offsets == nil && recommit {
		offsets = w.sameOffset()
	}
	committed, err = w.sess.end(ctx, ok, offsets)
	if committed && err == nil && recommit {
		w.noteCommitted(offsets)
	}
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

// sameOffset returns, for a transaction that commits no offset (nothing
// polled since the last commit: a sync's heartbeats while the partitions
// wait for a delay budget's next period, or have just resumed), an owned
// partition's last committed offset, to commit again: a no-op for the
// group. kgo learns that the broker has KIP-447 from the TxnOffsetCommit
// response only; without one it takes the broker for an old one and holds
// its session's lock 500 ms after End, which End itself then waits for:
// the poll loop stands still half a second, and the partitions resume that
// late into their period (docs/kafka-notes.md). Only when delay budgets
// are configured (exactly-once): with every worker's idle syncs doing it,
// the pacing after a broker restart delivered less (docs/results.md, Delay
// budgets). The offset is one a unit of work named and committed, kept by
// noteCommitted (kgo's own belief of what is committed runs ahead of it
// while polled records are queued). nil when none is known.
func (w *Worker) sameOffset() map[string]map[int32]kgo.EpochOffset {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tp, eo := range w.lastCommitted {
		if w.parts[tp] == nil {
			continue
		}
		return map[string]map[int32]kgo.EpochOffset{tp.topic: {tp.partition: eo}}
	}
	return nil
}

// noteCommitted keeps the offsets a committed unit of work named.
func (w *Worker) noteCommitted(offsets map[string]map[int32]kgo.EpochOffset) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastCommitted == nil {
		w.lastCommitted = map[topicPartition]kgo.EpochOffset{}
	}
	for t, m := range offsets {
		for id, eo := range m {
			w.lastCommitted[topicPartition{t, id}] = eo
		}
	}
}

// settle makes what the unit wrote the committed state of its partitions
// and stages, or counts the abort (the caller rolls the touched partitions
// back).
func (w *Worker) settle(u *unit, committed bool) {
	w.defs.settle(u.defs, committed)
	if !committed {
		w.m.commits.WithLabelValues("aborted").Inc()
		w.status.aborted++
		w.log.Info().Int("partitions", len(u.touched)).Msg("transaction aborted; rolling back")
		w.eachOwned(u.written, func(p *partition) {
			if !p.touched {
				p.ledgerAborted()
			}
		})
		return
	}
	w.m.commits.WithLabelValues("committed").Inc()
	w.status.commits++
	w.eachOwned(u.written, func(p *partition) { p.ledgerCommitted(u.now) })
	w.eachOwned(u.touched, func(p *partition) {
		p.touched = false
		for _, s := range p.kept() {
			s.Committed()
		}
	})
}

// rollback returns the touched partitions that are still assigned to their
// committed ledgers. It holds w.mu so that a revoke running meanwhile
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
