package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// The partition's side of the caps: loading them from the changelog when
// the partition is assigned, and keeping them in step with the
// transactions: the keys changed since the last commit are written to the
// changelog in the commit's transaction, and an abort restores them.

// capsLoad is the loading of the caps of one assignment's input
// partitions, shared by their goroutines; caps is read-only once done is
// closed.
type capsLoad struct {
	done chan struct{}
	caps map[string]*partitionCaps // by source
	err  error
}

// capTopics returns the changelog topic in a slice, or none without caps.
func (w *Worker) capTopics() []string {
	if w.caps == nil {
		return nil
	}
	return []string{w.caps.changelog}
}

// startCapsLoad starts loading the caps of the assigned input partitions
// in the background, or returns nil without caps.
func (w *Worker) startCapsLoad(cl *kgo.Client, assigned map[string][]int32) *capsLoad {
	if w.caps == nil {
		return nil
	}
	l := &capsLoad{done: make(chan struct{})}
	sources := map[string]int32{}
	var topics []string
	for t, ps := range assigned {
		if w.isReward(t) {
			continue
		}
		topics = append(topics, t)
		for _, p := range ps {
			sources[stats.SourceName(t, p)] = p
		}
	}
	go w.loadCaps(l, cl, topics, sources)
	return l
}

// loadCaps reads the committed caps of sources, retrying a few times. It
// fails rather than start a partition with no caps, which would let every
// key pass its cap again.
func (w *Worker) loadCaps(l *capsLoad, cl *kgo.Client, topics []string, sources map[string]int32) {
	defer close(l.done)
	if len(sources) == 0 {
		return
	}
	ctx := w.prodCtx
	parts := w.partitionCounts(ctx, cl, topics)
	spec := make(map[string]int, len(w.caps.specs))
	for i, s := range w.caps.specs {
		spec[s.Name] = i
	}
	t0 := time.Now()
	records := 0
	for attempt := 1; ; attempt++ {
		l.caps = make(map[string]*partitionCaps, len(sources))
		for src := range sources {
			topic, _, _ := stats.ParseSource(src)
			l.caps[src] = w.caps.newPartitionCaps(src, parts[topic])
		}
		records = 0
		l.err = stats.LoadCaps(ctx, w.cfg.clientOpts, w.caps.changelog, sources, func(e stats.CapEntry) {
			records++
			i, ok := spec[e.Cap]
			pc := l.caps[e.Source]
			if !ok || pc == nil {
				return // a cap no longer configured
			}
			if e.Deleted {
				pc.caps[i].Forget(stringOf(e.Key))
			} else {
				pc.caps[i].Restore(stringOf(e.Key), e.TAT)
			}
		})
		if l.err == nil || ctx.Err() != nil || attempt == 5 {
			break
		}
		w.log.Warn().Err(l.err).Int("attempt", attempt).Msg("load caps")
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
		}
	}
	if l.err != nil {
		l.err = fmt.Errorf("load caps: %w", l.err)
		return
	}
	keys := 0
	for _, pc := range l.caps {
		for _, c := range pc.caps {
			keys += c.Len()
		}
	}
	w.log.Info().Int("partitions", len(sources)).Int("records", records).Int("keys", keys).
		Dur("took", time.Since(t0)).Msg("caps loaded")
}

// partitionCounts returns the partition count of topics, for the keying
// check; a topic it cannot learn is left out (no check).
func (w *Worker) partitionCounts(ctx context.Context, cl *kgo.Client, topics []string) map[string]int {
	out := make(map[string]int, len(topics))
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(mctx, topics...)
	for _, t := range topics {
		if d, ok := td[t]; ok && d.Err == nil && len(d.Partitions) > 0 {
			out[t] = len(d.Partitions)
		} else {
			w.log.Warn().Err(err).Str("topic", t).Msg("partition count unknown: no keying check for caps")
		}
	}
	return out
}

// openCaps gives an input partition its loaded caps. It returns false when
// the partition must not process records: it was revoked while loading, or
// loading failed (which is fatal).
func (p *partition) openCaps() bool {
	if p.w.caps == nil || p.reward {
		return true
	}
	l := p.load.caps
	select {
	case <-l.done:
	case <-p.quit:
		return false
	}
	if l.err != nil {
		p.w.fail(l.err)
		return false
	}
	p.caps = l.caps[p.source]
	p.ev.caps = p.caps
	return true
}

// writeCaps, at a commit (the partition idle), forgets the keys that
// expired, writes every key changed since the last commit to the changelog
// (its TAT, or a tombstone), and flushes the partition's cap metrics.
func (w *Worker) writeCaps(p *partition, now time.Time) error {
	if p.caps == nil {
		return nil
	}
	p.caps.flushMetrics()
	for _, r := range p.caps.changelog(p.id, now) {
		w.produce(r)
	}
	return nil
}

// changelog sweeps and returns the changelog records of a commit: one per
// key changed since the last commit, in partition of the changelog.
func (pc *partitionCaps) changelog(partition int32, now time.Time) []*kgo.Record {
	pc.sweep(now)
	var recs []*kgo.Record
	for i, d := range pc.dirty {
		name := pc.set.specs[i].Name
		for k := range d {
			tat, ok := pc.caps[i].Lookup(bytesOf(k))
			recs = append(recs, stats.CapRecord(pc.set.changelog, partition, pc.source, name, bytesOf(k), tat, !ok))
		}
	}
	return recs
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
