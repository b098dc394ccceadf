package consumer

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// Each owned partition (a source) keeps its committed counters in its
// ledger on the stats topic (stats.Ledger): at every commit, in the same
// transaction as the outputs and the input offsets, the partition writes
// what changed since the last commit (the lanes flow lists as changed,
// the variant counts of the experiments that moved, the budgets deleted)
// with its next offset; an idle partition writes a heartbeat every sync
// interval. A partition assigned restores its ledger (stats.LoadLedgers)
// and its lanes open from it, one by one, on their budget's first event.

// ledgerOpts returns the options of the partitions' ledgers: a heartbeat
// every half sync interval at most, so that idle sources, whose heartbeats
// are written at the commits of a sync (Worker.write), vouch for their
// counters once per sync interval.
func (w *Worker) ledgerOpts() []stats.LedgerOpt {
	return []stats.LedgerOpt{stats.WithHeartbeat(w.cfg.syncInterval / 2)}
}

// ledgerRecords returns the partition's ledger records for the unit of
// work at now (nil when it has nothing to write): the changes of a
// touched partition, the budgets to drop, or a heartbeat at a sync when
// one is due. The partition must be idle and started.
func (p *partition) ledgerRecords(now time.Time, sync bool) ([]*kgo.Record, error) {
	drop := p.drops.take(p.w)
	if sync && !now.Before(p.forgetAt) {
		drop = p.forgettable(now, slices.Clip(drop))
	}
	if !p.touched && len(drop) == 0 && !(sync && p.led.Due(now)) {
		return nil, nil
	}
	ch := stats.Changes{DropBudgets: drop}
	if p.touched {
		p.reps = p.src.Changed(now, p.reps[:0])
		ch.Reports = p.reps
		ch.Variants = p.variants.changed()
	}
	recs, err := p.led.Records(ch, p.nextOffset, now)
	if err == nil && len(recs) == 0 {
		p.src.Published() // what Changed listed equals the committed values
	}
	return recs, err
}

// forgetEvery is how often, in sync intervals, a partition looks for the
// budgets whose counters its ledger may forget.
const forgetEvery = 10

// forgettable appends to drop the budgets whose counters the partition's
// ledger may forget at now (flow.Source.Forgettable: period budgets
// counted in a period that ended, with no lane open here), so that a
// ledger, and every View, holds the pairs that count in the current
// period rather than every pair that ever counted. It looks every
// forgetEvery sync intervals.
func (p *partition) forgettable(now time.Time, drop []string) []string {
	p.forgetAt = now.Add(forgetEvery * p.w.cfg.syncInterval)
	return p.src.Forgettable(now, p.led.Counted(nil), drop)
}

// ledgerCommitted makes the records ledgerRecords returned the partition's
// committed state.
func (p *partition) ledgerCommitted(now time.Time) {
	p.led.Committed()
	p.src.Published()
	p.drops.committed()
	p.commitOffset, p.committedAt = p.led.Offset(), now
}

// ledgerAborted says the records of an untouched partition (a heartbeat,
// drops) were not written: they are offered again.
func (p *partition) ledgerAborted() {
	p.led.Aborted()
	p.drops.aborted()
}

// drops are the budgets to drop from a partition's ledger: deleted from
// the tree since the partition's last commit (added by Worker.changed,
// from the goroutine that changes the budgets), or, when the partition
// starts, the budgets its restored ledger holds that the tree no longer
// has. A budget added again meanwhile is not dropped.
type drops struct {
	mu      sync.Mutex
	pending map[string]bool
	taken   []string // written in the unit of work in flight
}

func (d *drops) add(names []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = make(map[string]bool, len(names))
	}
	for _, n := range names {
		d.pending[n] = true
	}
}

// restored adds the budgets of st the tree does not have.
func (d *drops) restored(w *Worker, st stats.LedgerState) {
	var gone []string
	for _, r := range st.Reports {
		if _, ok := w.tree.Budget(r.Budget); !ok {
			gone = append(gone, r.Budget)
		}
	}
	if len(gone) > 0 {
		d.add(gone)
	}
}

// take returns the budgets to drop now (those still out of the tree).
func (d *drops) take(w *Worker) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.taken = d.taken[:0]
	for n := range d.pending {
		if _, back := w.tree.Budget(n); !back {
			d.taken = append(d.taken, n)
		}
	}
	clear(d.pending)
	return d.taken
}

func (d *drops) committed() {
	d.mu.Lock()
	d.taken = d.taken[:0]
	d.mu.Unlock()
}

func (d *drops) aborted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.taken {
		if d.pending == nil {
			d.pending = map[string]bool{}
		}
		d.pending[n] = true
	}
	d.taken = d.taken[:0]
}
