package consumer

import "time"

// The partition's side of the caps: opening them when the partition
// starts, and keeping them in step with the transactions.

// openCaps gives an input partition its caps. It returns false when the
// partition must not process records.
func (p *partition) openCaps() bool {
	if p.w.caps == nil || p.reward {
		return true
	}
	p.caps = p.w.caps.newPartitionCaps(p.source, 0)
	p.ev.caps = p.caps
	return true
}

// writeCaps, at a commit (the partition idle), forgets the keys that
// expired and flushes the partition's cap metrics.
func (w *Worker) writeCaps(p *partition, now time.Time) error {
	if p.caps == nil {
		return nil
	}
	p.caps.flushMetrics()
	p.caps.sweep(now)
	return nil
}

// capsCommitted makes the partition's cap changes committed.
func (p *partition) capsCommitted() {
	if p.caps != nil {
		p.caps.committed()
	}
}

// rollbackCaps returns the partition's caps to the last commit.
func (p *partition) rollbackCaps() {
	if p.caps != nil {
		p.caps.rollback()
	}
}

// Sweeping: at every commit of a partition, up to sweepShards shards of
// each cap are swept, stopping early once sweepKeys keys were removed, so
// that the work and the tombstones of a commit stay bounded.
const (
	sweepShards = 8
	sweepKeys   = 4096
)

// sweep forgets the keys whose TAT is not after the horizon: the latest
// event time seen, or now if that is earlier (an event time far in the
// future must not expire every key). A swept key is dirty: the changelog
// gets its tombstone, and an abort restores it.
func (pc *partitionCaps) sweep(now time.Time) int {
	h := min(pc.watermark, now.UnixNano())
	if h <= 0 {
		return 0
	}
	horizon := time.Unix(0, h)
	removed := 0
	for i, c := range pc.caps {
		d := pc.dirty[i]
		forgotten := func(key []byte, tat time.Time) {
			if _, ok := d[stringOf(key)]; !ok {
				d[string(key)] = capUndo{tat.UnixNano(), true}
			}
		}
		for n := 0; n < sweepShards && removed < sweepKeys; n++ {
			removed += c.SweepFunc(horizon, 1, forgotten)
		}
	}
	return removed
}
