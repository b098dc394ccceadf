package pipeline

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/internal/clip"
	"github.com/throttler/throttler/stats"
)

// The partition's side of the caps: loading them from the changelog when
// the stage is built for the partition, and keeping them in step with the
// transactions (partitionCaps is the partition's State): the keys changed
// since the last commit are written to the changelog in the commit's
// transaction, and an abort restores them.

// loadAttempts bounds the tries of a caps load.
const loadAttempts = 5

// loadChangelog reads the committed caps of part from the changelog,
// retrying a few times. It fails rather than start the partition with no
// caps.
func (s *Caps) loadChangelog(part *Partition) (*partitionCaps, error) {
	ctx := part.Context()
	spec := make(map[string]int, len(s.specs))
	for i, sp := range s.specs {
		spec[sp.Name] = i
	}
	sources := map[string]int32{part.Source: part.ID}
	t0 := time.Now() // for the log line only
	var pc *partitionCaps
	records, skipped := 0, 0
	var lastBad error
	var err error
	for attempt := 1; ; attempt++ {
		pc = s.newPartitionCaps(part.Source, part.ID, part.Partitions)
		records, skipped = 0, 0
		err = stats.LoadCaps(ctx, s.clientOpts, s.changelog, sources, func(e stats.CapEntry) {
			records++
			if e.Err != nil {
				skipped++
				lastBad = e.Err
				return
			}
			i, ok := spec[e.Cap]
			if !ok || e.Source != part.Source {
				return // a cap no longer configured
			}
			if e.Deleted {
				pc.caps[i].Forget(bytesconv.String(e.Key))
			} else {
				pc.caps[i].Restore(bytesconv.String(e.Key), e.TAT)
			}
		})
		if err == nil || ctx.Err() != nil || attempt == loadAttempts {
			break
		}
		s.log.Warn().Str("error", clip.Error(err)).Int("attempt", attempt).Str("source", part.Source).Msg("load caps")
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load caps: %w", err)
	}
	if part.Partitions == 0 {
		s.log.Warn().Str("source", part.Source).Msg("partition count unknown: no keying check for caps")
	}
	if skipped > 0 {
		s.log.Warn().Str("source", part.Source).Int("skipped", skipped).Str("last_error", clip.Error(lastBad)).
			Msg("caps changelog records skipped: they do not decode; their keys keep their earlier state (the cap may let their burst through once more)")
	}
	keys := 0
	for _, c := range pc.caps {
		keys += c.Len()
	}
	s.log.Info().Str("source", part.Source).Int("records", records).Int("keys", keys).
		Dur("took", time.Since(t0)).Msg("caps loaded")
	return pc, nil
}

// Flush, at a commit (the partition idle), forgets the keys that expired,
// returns a changelog record for every key changed since the last commit
// (its TAT, or a tombstone) and flushes the partition's cap metrics.
func (pc *partitionCaps) Flush(now time.Time) []*kgo.Record {
	pc.flushMetrics()
	return pc.changelog(now)
}

// Committed makes the changes since the last commit the committed state.
func (pc *partitionCaps) Committed() { pc.committed() }

// Aborted returns the caps to their state at the last commit.
func (pc *partitionCaps) Aborted() { pc.rollback() }

// changelog sweeps and returns the changelog records of a commit: one per
// key changed since the last commit, in the changelog's partition of the
// same number as the source's.
func (pc *partitionCaps) changelog(now time.Time) []*kgo.Record {
	pc.sweep(now)
	var recs []*kgo.Record
	for i, d := range pc.dirty {
		name := pc.set.specs[i].Name
		for k := range d {
			tat, ok := pc.caps[i].Lookup(bytesconv.Bytes(k))
			recs = append(recs, stats.CapRecord(pc.set.changelog, pc.id, pc.source, name, bytesconv.Bytes(k), tat, !ok))
		}
	}
	return recs
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
			if _, ok := d[bytesconv.String(key)]; !ok {
				d[string(key)] = capUndo{tat.UnixNano(), true}
			}
		}
		for n := 0; n < sweepShards && removed < sweepKeys; n++ {
			removed += c.SweepFunc(horizon, 1, forgotten)
		}
	}
	return removed
}
