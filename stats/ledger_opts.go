package stats

import (
	"math"
	"time"
)

// Ledger defaults and bounds.
const (
	// DefaultRecordBytes is the default bound on a ledger record's key
	// and value bytes.
	DefaultRecordBytes = 64 << 10
	// MaxRecordBytes is the largest bound WithRecordBytes accepts: half
	// the broker's default 1 MB message limit.
	MaxRecordBytes = 512 << 10
	// MinRecordBytes is the smallest bound WithRecordBytes accepts.
	MinRecordBytes = 1 << 10
	// DefaultSnapshotFactor is the default k of WithSnapshotFactor.
	DefaultSnapshotFactor = 2
	// DefaultHeartbeat is the default of WithHeartbeat: the consumer's
	// default sync interval.
	DefaultHeartbeat = time.Second
)

// LedgerOpt configures a Ledger (NewLedger).
type LedgerOpt interface{ applyLedger(*ledgerCfg) }

type ledgerCfg struct {
	recordBytes int
	factor      float64
	heartbeat   time.Duration
}

func defaultLedgerCfg() ledgerCfg {
	return ledgerCfg{recordBytes: DefaultRecordBytes, factor: DefaultSnapshotFactor, heartbeat: DefaultHeartbeat}
}

func (c *ledgerCfg) validate() error {
	switch {
	case c.recordBytes < MinRecordBytes || c.recordBytes > MaxRecordBytes:
		return errInvalidConfig("ledger record bytes %d outside [%d, %d]", c.recordBytes, MinRecordBytes, MaxRecordBytes)
	case !(c.factor > 0) || c.factor > 64 || math.IsNaN(c.factor):
		return errInvalidConfig("snapshot factor %v outside (0, 64]", c.factor)
	case c.heartbeat <= 0:
		return errInvalidConfig("heartbeat interval %v is not positive", c.heartbeat)
	}
	return nil
}

type ledgerOpt func(*ledgerCfg)

func (o ledgerOpt) applyLedger(c *ledgerCfg) { o(c) }

// WithRecordBytes bounds the bytes (key and value) of every ledger record
// the Ledger writes, whatever the number of entries: a snapshot or a delta
// that needs more is split over several records. Default
// DefaultRecordBytes (64 KiB); MinRecordBytes to MaxRecordBytes (512 KiB).
// An entry that alone does not fit (names of tens of KiB) cannot be
// written (ErrInvalidReport).
func WithRecordBytes(n int) LedgerOpt { return ledgerOpt(func(c *ledgerCfg) { c.recordBytes = n }) }

// WithSnapshotFactor sets k: the Ledger writes a new snapshot instead of a
// delta when the chain of deltas since the last snapshot would pass k
// times the snapshot's bytes (and at least one record's bound, so that a
// small ledger is not re-written at every commit). Writes then cost at
// most (1 + 1/k) times the deltas' bytes, and a reader catching up reads
// at most about (1 + 2k) times the snapshot per source. Default
// DefaultSnapshotFactor (2); (0, 64].
func WithSnapshotFactor(k float64) LedgerOpt { return ledgerOpt(func(c *ledgerCfg) { c.factor = k }) }

// WithHeartbeat sets how long a source may go without a record: when
// nothing changed and the offset did not move, Records writes a heartbeat
// once this long has passed since the source's last record. Readers take
// a source whose newest instant is well past it as stale. Default
// DefaultHeartbeat (1s).
func WithHeartbeat(d time.Duration) LedgerOpt {
	return ledgerOpt(func(c *ledgerCfg) { c.heartbeat = d })
}
