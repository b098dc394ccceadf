package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttler/throttler/pipeline"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Backpressure for delay budgets (config action: delay).
//
// When a delay budget has no allowance left for an event, the decide stage
// answers OutcomeDelay. The partition goroutine then stops at that record:
// it keeps nothing of it or of the records after it (later batches of the
// partition are dropped unprocessed) and remembers its offset, the first
// unprocessed one, as its next offset. At the next commit, with every
// partition idle and rebalances blocked:
//
//   - the offset committed for the partition is that first unprocessed
//     offset, not the offset after the last polled record: the session ends
//     with kgo.PreTxnCommitFnContext rewriting the partition's offset in the
//     transaction's offset commit (exactly-once), or the worker commits the
//     polled offsets with the held ones replaced (at-least-once). The
//     partition's ledger holds the same offset, so offsets and counters
//     agree after any crash;
//   - once committed, the partition is paused (PauseFetchPartitions) and
//     rewound to that offset (SetOffsets, which also drops every buffered
//     fetch; the other partitions' positions are kept), so its records are
//     fetched again when the poll loop resumes it at the time flow gave:
//     the next period's refill.
//
// Why not SetOffsets before the commit: in a group consumer it sets the
// offset kgo believes committed as well, so the commit would leave the
// partition out and the broker would keep the previous transaction's
// offset, behind the ledger. An aborted transaction needs nothing:
// kgo rewinds every partition to its committed offset and the worker rolls
// the partitions back to their ledgers; the hold is forgotten.

// holdState is a partition's hold, owned by its goroutine (read by the poll
// loop while the partition is idle).
type holdState struct {
	on     bool
	parked bool      // the partition is parked (park.go): it stays paused
	epoch  int32     // leader epoch of the held record
	until  time.Time // when to resume fetching
	budget string
}

// holdBack stops the partition at r, delayed by a delay budget or, with
// e.RetryAt, waiting for its schema (no budget: no delay metrics).
func (p *partition) holdBack(r *kgo.Record, e *pipeline.Event) {
	until, budget := e.Now, e.Fields.Budget
	if l := p.src.Peek(e.Fields.Budget); l != nil {
		until = l.RetryAt()
	}
	if !e.RetryAt.IsZero() {
		until, budget = e.RetryAt, ""
	}
	// The event's budget may be a string over the record's bytes; the hold
	// outlives the record (it names the pause in the log and the metrics,
	// whose label keeps it): a copy does not keep the fetch it came in.
	p.hold = holdState{on: true, epoch: r.LeaderEpoch, until: until, budget: strings.Clone(budget)}
	p.nextOffset = r.Offset
}

// paused is a partition the poll loop has paused.
type paused struct {
	until, since time.Time
	budget       string
}

// delayState is the worker's paused partitions and their metrics.
type delayState struct {
	mu     sync.Mutex // paused is also touched by the revoke callback
	paused map[topicPartition]paused

	gauge   prometheus.Gauge
	seconds *prometheus.CounterVec // budget
	pauses  *prometheus.CounterVec // budget
}

func (d *delayState) init(reg prometheus.Registerer) {
	d.paused = map[topicPartition]paused{}
	d.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_paused_partitions",
		Help: "Partitions paused by a delay budget until its next period, or waiting for a schema."})
	d.seconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttler_delayed_seconds_total",
		Help: "Seconds partitions spent paused by a delay budget, summed over partitions."}, []string{"budget"})
	d.pauses = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttler_delays_total",
		Help: "Times a delay budget paused a partition."}, []string{"budget"})
	reg.MustRegister(d.gauge, d.seconds, d.pauses)
}

// heldOffsets returns the first unprocessed offset of every held partition,
// to be committed in place of kgo's polled offsets; nil when none is held.
func heldOffsets(ps []*partition) map[string]map[int32]kgo.EpochOffset {
	var out map[string]map[int32]kgo.EpochOffset
	for _, p := range ps {
		if !p.hold.on {
			continue
		}
		out = setOffset(out, topicPartition{p.topic, p.id}, kgo.EpochOffset{Epoch: p.hold.epoch, Offset: p.nextOffset})
	}
	return out
}

// applyHolds ends the holds of ps after the unit of work ended: committed,
// the held partitions are paused and rewound to their first unprocessed
// offset; aborted, kgo has rewound them already. Partitions must be idle.
func (w *Worker) applyHolds(ps []*partition, held map[string]map[int32]kgo.EpochOffset, committed bool) {
	if len(held) == 0 {
		return
	}
	now := w.cfg.now()
	cl := w.sess.client()
	if committed {
		pause := map[string][]int32{}
		for t, m := range held {
			for id := range m {
				pause[t] = append(pause[t], id)
			}
		}
		cl.PauseFetchPartitions(pause)
		cl.SetOffsets(held)
	}
	w.delay.mu.Lock()
	for _, p := range ps {
		if !p.hold.on {
			continue
		}
		if committed && p.hold.parked {
			w.log.Debug().Str("source", p.source).Int64("offset", p.nextOffset).Msg("parked: partition paused")
		} else if committed {
			w.delay.paused[topicPartition{p.topic, p.id}] = paused{until: p.hold.until, since: now, budget: p.hold.budget}
			if p.hold.budget != "" {
				w.delay.pauses.WithLabelValues(p.hold.budget).Inc()
			}
			w.log.Debug().Str("source", p.source).Int64("offset", p.nextOffset).Time("until", p.hold.until).
				Str("budget", p.hold.budget).Msg("delayed: partition paused")
		}
		p.hold = holdState{}
	}
	w.delay.gauge.Set(float64(len(w.delay.paused)))
	w.delay.mu.Unlock()
}

// resumeDue resumes the paused partitions whose time has come and returns
// the earliest time still awaited (zero when none is paused).
func (w *Worker) resumeDue(now time.Time) time.Time {
	w.delay.mu.Lock()
	defer w.delay.mu.Unlock()
	var next time.Time
	var resume map[string][]int32
	for tp, ps := range w.delay.paused {
		if now.Before(ps.until) {
			if next.IsZero() || ps.until.Before(next) {
				next = ps.until
			}
			continue
		}
		if resume == nil {
			resume = map[string][]int32{}
		}
		resume[tp.topic] = append(resume[tp.topic], tp.partition)
		w.unpauseLocked(tp, ps, now)
	}
	if resume != nil {
		w.sess.client().ResumeFetchPartitions(resume)
		w.log.Debug().Interface("partitions", resume).Msg("delay over: partitions resumed")
	}
	return next
}

// resumeRevoked forgets and resumes the paused partitions among revoked: a
// pause outlives an assignment in kgo, and would stop the partition if it
// came back.
func (w *Worker) resumeRevoked(cl *kgo.Client, revoked map[string][]int32) {
	now := w.cfg.now()
	w.delay.mu.Lock()
	defer w.delay.mu.Unlock()
	var resume map[string][]int32
	for t, ids := range revoked {
		for _, id := range ids {
			tp := topicPartition{t, id}
			if ps, ok := w.delay.paused[tp]; ok {
				if resume == nil {
					resume = map[string][]int32{}
				}
				resume[t] = append(resume[t], id)
				w.unpauseLocked(tp, ps, now)
			}
		}
	}
	if resume != nil && cl != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

func (w *Worker) unpauseLocked(tp topicPartition, ps paused, now time.Time) {
	delete(w.delay.paused, tp)
	if d := now.Sub(ps.since); d > 0 && ps.budget != "" {
		w.delay.seconds.WithLabelValues(ps.budget).Add(d.Seconds())
	}
	w.delay.gauge.Set(float64(len(w.delay.paused)))
}

// delayClientOpts shortens the fetch long-poll when a delay budget is
// configured. A fetch request in flight for the partitions that are not
// paused (caught up, so the broker holds it for up to FetchMaxWait, 5 s by
// default) keeps a resumed partition from being fetched until it returns;
// measured on kfake, every resume then waited ~5 s. The wait becomes a
// twentieth of the shortest delay period (of the budgets at start and
// those added since), between 10 ms and 500 ms.
func (w *Worker) delayClientOpts() []kgo.Opt {
	shortest := time.Duration(w.shortestDelay.Load())
	if shortest == 0 {
		return nil
	}
	return []kgo.Opt{kgo.FetchMaxWait(min(max(shortest/20, 10*time.Millisecond), 500*time.Millisecond))}
}

// pollDeadline is the commit deadline, or the next resume if earlier.
func (w *Worker) pollDeadline(nextCommit time.Time) time.Time {
	if next := w.resumeDue(w.cfg.now()); !next.IsZero() && next.Before(nextCommit) {
		return next
	}
	return nextCommit
}

// overrideTxnOffsets rewrites (or adds) the held partitions' offsets in a
// transactional offset commit.
func overrideTxnOffsets(req *kmsg.TxnOffsetCommitRequest, held map[string]map[int32]kgo.EpochOffset) {
	done := map[string]map[int32]bool{}
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			pt := &t.Partitions[j]
			if eo, ok := held[t.Topic][pt.Partition]; ok {
				pt.Offset, pt.LeaderEpoch = eo.Offset, eo.Epoch
				mark(done, t.Topic, pt.Partition)
			}
		}
	}
	for topic, m := range held {
		for id, eo := range m {
			if done[topic][id] {
				continue
			}
			// Not in the commit (kgo saw nothing new polled): add it.
			i := topicIndex(len(req.Topics), func(i int) string { return req.Topics[i].Topic }, topic)
			if i < 0 {
				nt := kmsg.NewTxnOffsetCommitRequestTopic()
				nt.Topic = topic
				req.Topics = append(req.Topics, nt)
				i = len(req.Topics) - 1
			}
			np := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			np.Partition, np.Offset, np.LeaderEpoch, np.Metadata = id, eo.Offset, eo.Epoch, &req.MemberID
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, np)
		}
	}
}

// commitOffsetsSync commits offsets and returns the first error, of the
// request or of a partition.
func commitOffsetsSync(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) error {
	var rerr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			err = commitResponseErr(resp)
		}
		rerr = err
	})
	return rerr
}

// commitResponseErr returns the first partition's error of an offset
// commit's response.
func commitResponseErr(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

func mark(m map[string]map[int32]bool, topic string, id int32) {
	if m[topic] == nil {
		m[topic] = map[int32]bool{}
	}
	m[topic][id] = true
}

func topicIndex(n int, name func(int) string, topic string) int {
	for i := 0; i < n; i++ {
		if name(i) == topic {
			return i
		}
	}
	return -1
}
