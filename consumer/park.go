package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/clip"
	"github.com/throttler/throttler/stats"
)

// Parking.
//
// A partition whose committed ledger cannot be restored whole (a record of
// it does not decode, names an input offset past the partition's end, or
// carries a sequence no writer can continue: stats.LedgerProblem,
// stats.ErrSequenceExhausted) must not run: it would count from less than
// was committed, or skip records as counted. It is parked instead, and
// every other partition runs. A parked partition processes nothing: its
// goroutine holds it at its first record (its committed offset), as a
// delay budget holds one (delay.go), so the commit keeps that offset and
// then pauses and rewinds the partition. It is logged once (a bounded
// line), counted (throttler_parked_partitions, throttler_parks_total),
// named by /readyz, in the worker's status record (`throttler status`,
// the dashboard) with its reason.
//
// Every ParkRetry the worker reads the parked partitions' ledgers again
// (in the background); one that restores whole (after `throttler ledger
// repair`, see docs/operations.md) is started again at the next commit,
// from its committed offset, as on an assignment.

// DefaultParkRetry is how often the ledgers of parked partitions are read
// again (ParkRetry).
const DefaultParkRetry = 10 * time.Second

// maxParkedListed bounds the partitions /readyz names.
const maxParkedListed = 8

// parked is one parked partition.
type parked struct {
	p      *partition
	reason string // clipped
	kind   string // the metric's reason label
	since  time.Time
}

// parkState is the worker's parked partitions, their metrics and the
// check of their ledgers.
type parkState struct {
	mu       sync.Mutex // the partitions' goroutines park, the poll loop unparks
	parts    map[topicPartition]*parked
	checking bool
	next     time.Time                    // no check before
	results  map[string]stats.LedgerState // of the last check, to apply
	gauge    prometheus.Gauge
	total    *prometheus.CounterVec // reason
}

func (s *parkState) init(reg prometheus.Registerer) {
	s.parts = map[topicPartition]*parked{}
	s.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_parked_partitions",
		Help: "Partitions parked: their ledger on the stats topic cannot be restored whole (see docs/operations.md, Parked partitions)."})
	s.total = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttler_parks_total",
		Help: "Times a partition was parked, by reason: corrupt, unknown_version, beyond_end, sequence."}, []string{"reason"})
	reg.MustRegister(s.gauge, s.total)
}

// parkKind is the metric's reason for err.
func parkKind(err error) string {
	switch {
	case errors.Is(err, stats.ErrUnknownVersion):
		return "unknown_version"
	case errors.Is(err, stats.ErrBeyondEnd):
		return "beyond_end"
	case errors.Is(err, stats.ErrSequenceExhausted):
		return "sequence"
	}
	return "corrupt"
}

// park parks p (its goroutine, in start) for err, the ledger's first
// problem of n.
func (p *partition) park(err error, n int) {
	w := p.w
	reason := clip.Error(err)
	if n > 1 {
		reason += fmt.Sprintf(" (and %d more records)", n-1)
	}
	kind := parkKind(err)
	w.parks.mu.Lock()
	w.parks.parts[topicPartition{p.topic, p.id}] = &parked{p: p, reason: reason, kind: kind, since: w.cfg.now()}
	w.parks.gauge.Set(float64(len(w.parks.parts)))
	w.parks.mu.Unlock()
	w.parks.total.WithLabelValues(kind).Inc()
	w.log.Error().Str("source", p.source).Str("reason", reason).
		Msg("partition parked: its ledger cannot be restored whole; the other partitions run. See 'throttler ledger show " + p.source + "' and docs/operations.md (Parked partitions)")
}

// holdParked holds a parked partition at its first record (the committed
// offset; see holdBack), always at that same record.
func (p *partition) holdParked(b batch) {
	if len(b.recs) == 0 {
		return
	}
	if p.parkAt < 0 {
		r := b.recs[0]
		p.parkAt, p.parkEpoch = r.Offset, r.LeaderEpoch
	}
	p.hold = holdState{on: true, epoch: p.parkEpoch, parked: true}
	p.nextOffset = p.parkAt
	p.touched = true
}

// unpark forgets the parked partitions among ps (stopped or revoked) and
// resumes their fetching in cl (a pause outlives an assignment).
func (w *Worker) unpark(cl *kgo.Client, ps []*partition) {
	w.parks.mu.Lock()
	defer w.parks.mu.Unlock()
	resume := map[string][]int32{}
	for _, p := range ps {
		tp := topicPartition{p.topic, p.id}
		if k := w.parks.parts[tp]; k != nil && k.p == p {
			delete(w.parks.parts, tp)
			resume[p.topic] = append(resume[p.topic], p.id)
		}
	}
	w.parks.gauge.Set(float64(len(w.parks.parts)))
	if len(resume) > 0 && cl != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

// parkedErr is Ready's error while partitions are parked, nil otherwise.
func (w *Worker) parkedErr() error {
	w.parks.mu.Lock()
	defer w.parks.mu.Unlock()
	if len(w.parks.parts) == 0 {
		return nil
	}
	var names []string
	for _, k := range w.parks.parts {
		names = append(names, k.p.source+": "+k.reason)
	}
	slices.Sort(names)
	more := ""
	if len(names) > maxParkedListed {
		more = fmt.Sprintf("; and %d more", len(names)-maxParkedListed)
		names = names[:maxParkedListed]
	}
	return fmt.Errorf("%d partitions parked (docs/operations.md, Parked partitions): %s%s", len(w.parks.parts), strings.Join(names, "; "), more)
}

// parkedReasons returns the reason of every parked partition, by source.
func (w *Worker) parkedReasons() map[string]string {
	w.parks.mu.Lock()
	defer w.parks.mu.Unlock()
	out := make(map[string]string, len(w.parks.parts))
	for _, k := range w.parks.parts {
		out[k.p.source] = k.reason
	}
	return out
}

// retryParked runs at every commit, with the partitions idle and
// rebalances blocked: it starts again the parked partitions the last
// check found whole, and starts a check in the background every
// ParkRetry while some are parked.
func (w *Worker) retryParked(now time.Time) {
	w.parks.mu.Lock()
	results := w.parks.results
	w.parks.results = nil
	var sources []string
	due := len(w.parks.parts) > 0 && !w.parks.checking && !now.Before(w.parks.next)
	for _, k := range w.parks.parts {
		sources = append(sources, k.p.source)
	}
	if due {
		w.parks.checking, w.parks.next = true, now.Add(w.cfg.parkRetry)
	}
	w.parks.mu.Unlock()
	for src, st := range results {
		w.restartParked(src, st)
	}
	if due {
		go w.checkParked(sources)
	}
}

// checkParked reads the ledgers of sources again and keeps, for
// retryParked, the states that restore whole.
func (w *Worker) checkParked(sources []string) {
	ctx, cancel := context.WithTimeout(w.prodCtx, 30*time.Second)
	defer cancel()
	states, err := stats.LoadLedgersWithin(ctx, w.cfg.clientOpts, w.cfg.topics.Stats, w.inputEnds, sources...)
	whole := map[string]stats.LedgerState{}
	for src, st := range states {
		if _, lerr := stats.NewLedger(w.cfg.topics.Stats, st, w.view.Seq(src)); lerr == nil {
			whole[src] = st
		}
	}
	w.parks.mu.Lock()
	defer w.parks.mu.Unlock()
	w.parks.checking = false
	if err != nil {
		w.log.Warn().Str("error", clip.Error(err)).Msg("reading the ledgers of parked partitions")
		return
	}
	if len(whole) > 0 {
		w.parks.results = whole
	}
}

// restartParked starts again the parked partition of src from st, which
// restores whole. The partitions must be idle and rebalances blocked.
func (w *Worker) restartParked(src string, st stats.LedgerState) {
	w.parks.mu.Lock()
	var k *parked
	for _, x := range w.parks.parts {
		if x.p.source == src {
			k = x
		}
	}
	w.parks.mu.Unlock()
	if k == nil {
		return // revoked meanwhile
	}
	old := k.p
	tp := topicPartition{old.topic, old.id}
	w.mu.Lock()
	owned := w.parts[tp] == old
	if owned {
		delete(w.parts, tp)
	}
	w.mu.Unlock()
	if !owned {
		return
	}
	w.stopPartitions([]*partition{old}, false)
	// Records dispatched to the parked partition since the last commit
	// were held, not processed, and kgo has polled past them: without its
	// hold the unit would commit the offset after them. The partition
	// starts again from its hold, the committed offset.
	if old.parkAt >= 0 {
		w.ahead.forget(tp)
		w.sess.client().SetOffsets(map[string]map[int32]kgo.EpochOffset{tp.topic: {tp.partition: {Epoch: old.parkEpoch, Offset: old.parkAt}}})
	}
	load := &ledgerLoad{done: make(chan struct{}), states: map[string]stats.LedgerState{src: st},
		parts: w.partitionCounts(w.prodCtx, w.sess.client(), []string{old.topic})}
	close(load.done)
	p := w.newPartition(old.topic, old.id, old.reward, load)
	w.mu.Lock()
	w.parts[tp] = p
	w.mu.Unlock()
	go p.run()
	w.unpark(w.sess.client(), []*partition{old})
	w.log.Info().Str("source", src).Int64("offset", st.Offset).Msg("parked partition restores whole again: started")
}

// inputEnds returns the end offsets (high watermarks) of the input and
// reward partitions sources name (stats.InputEnds).
func (w *Worker) inputEnds(ctx context.Context, sources []string) (map[string]int64, error) {
	cl, err := kgo.NewClient(w.cfg.clientOpts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	topics := map[string]bool{}
	for _, s := range sources {
		if t, _, err := stats.ParseSource(s); err == nil {
			topics[t] = true
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, slices.Collect(maps.Keys(topics))...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(sources))
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[stats.SourceName(o.Topic, o.Partition)] = o.Offset
		}
	})
	return out, nil
}
