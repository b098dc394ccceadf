package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttler/throttler/internal/clip"
	"github.com/throttler/throttler/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// onAssigned starts a goroutine for every new partition. Their ledgers
// are loaded in the background (one reader for the whole assignment): a
// partition processes nothing before its flow source is opened from its
// committed ledger, and the callback returns at once, so that a slow load
// (a crashed owner's transaction still open) cannot hold up the group.
//
// A partition assigned while this worker still runs it (the group lost
// track of it: seen after broker restarts, as kgo's assignment differs
// from what its callbacks told) is stopped and started again: kgo fetches
// a newly assigned partition from its committed offset, so the partition
// restarts from its committed ledger, as on any other assignment.
func (w *Worker) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	w.restartOwned(cl, assigned)
	var sources []string
	for t, ps := range assigned {
		for _, p := range ps {
			sources = append(sources, stats.SourceName(t, p))
		}
	}
	load := &ledgerLoad{done: make(chan struct{})}
	topics := make([]string, 0, len(assigned))
	for t := range assigned {
		topics = append(topics, t)
	}
	go w.loadLedgers(load, cl, topics, sources)
	var started []*partition
	for t, ps := range assigned {
		for _, id := range ps {
			p := w.newPartition(t, id, w.isReward(t), load)
			started = append(started, p)
			go p.run()
		}
	}
	w.mu.Lock()
	for _, p := range started {
		w.parts[topicPartition{p.topic, p.id}] = p
	}
	n := len(w.parts)
	w.mu.Unlock()
	w.updateShare(ctx, cl)
	w.m.assigned.Set(float64(n))
	w.joined.Store(true)
	w.log.Info().Int("new", len(started)).Int("owned", n).Msg("partitions assigned")
}

// restartOwned stops the partitions of assigned that this worker still
// runs (see onAssigned).
func (w *Worker) restartOwned(cl *kgo.Client, assigned map[string][]int32) {
	again, _ := w.release(assigned)
	if len(again) == 0 {
		return
	}
	w.log.Warn().Int("partitions", len(again)).
		Msg("partitions assigned again while still owned: restarting them from their committed ledgers")
	w.stopPartitions(again, false)
	w.unpark(cl, again)
}

// ledgerLoadPatience is how long loadLedgers retries a load that fails:
// longer than a broker restart takes (up to 20 s seen on a loaded 2-core
// machine), short enough that a worker that cannot read its stats topic
// says so.
const ledgerLoadPatience = 2 * time.Minute

// loadLedgers learns the partition counts of the assigned topics (for the
// stages; see pipeline.Partition) and reads the committed ledger of every
// source from its stats partition, retrying for ledgerLoadPatience (a
// refused authorization at once). It fails rather than start a partition
// from zero, which would count its budgets twice.
func (w *Worker) loadLedgers(load *ledgerLoad, cl *kgo.Client, topics, sources []string) {
	defer close(load.done)
	if len(sources) == 0 {
		return
	}
	ctx := w.prodCtx
	load.parts = w.partitionCounts(ctx, cl, topics)
	start := time.Now() // real time: the patience is for brokers coming back
	for attempt := 1; ; attempt++ {
		load.states, load.err = stats.LoadLedgersWithin(ctx, w.cfg.clientOpts, w.cfg.topics.Stats, w.inputEnds, sources...)
		if load.err == nil || ctx.Err() != nil || authorization(load.err) || time.Since(start) >= ledgerLoadPatience {
			break
		}
		w.log.Warn().Str("error", clip.Error(load.err)).Int("attempt", attempt).Msg("load ledgers")
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt)*500*time.Millisecond, 2*time.Second)):
		}
	}
	if load.err != nil {
		load.err = fmt.Errorf("load ledgers: %w", load.err)
	}
}

// onRevoked stops the revoked partitions. With BlockRebalanceOnPoll they
// are idle and committed; were they not, the transaction session aborts
// the open transaction. At-least-once, their offsets are committed again
// (see commitRevoked).
func (w *Worker) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	w.revoke(ctx, cl, revoked, w.cfg.delivery == AtLeastOnce, false)
}

// revoke stops the partitions of revoked, then, when commit is set,
// commits the offsets they reached (see commitRevoked); lost: the group
// took them from this worker (see stopPartitions).
func (w *Worker) revoke(ctx context.Context, cl *kgo.Client, revoked map[string][]int32, commit, lost bool) {
	gone, n := w.release(revoked)
	w.stopPartitions(gone, lost)
	if commit {
		w.awaitCommitter() // the ledgers of the last unit before its offsets
		w.commitRevoked(ctx, cl, gone)
	}
	w.resumeRevoked(cl, revoked)
	w.unpark(cl, gone)
	w.updateShare(ctx, cl)
	w.m.assigned.Set(float64(n))
	if len(gone) > 0 {
		w.log.Info().Int("revoked", len(gone)).Int("owned", n).Msg("partitions revoked")
	}
}

// release takes the partitions of m that this worker runs out of its
// set, and returns them (still running) with how many are left.
func (w *Worker) release(m map[string][]int32) (gone []*partition, left int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, ps := range m {
		for _, id := range ps {
			tp := topicPartition{t, id}
			if p := w.parts[tp]; p != nil {
				gone = append(gone, p)
				delete(w.parts, tp)
			}
			delete(w.lastCommitted, tp)
		}
	}
	return gone, len(w.parts)
}

// updateShare tells the flow tree this worker's share of the cluster's
// traffic sources: the input partitions it owns over all partitions of
// the input topics (reward partitions do not count). flow uses it for its
// cold start and when the stats view is silent. With no input partition
// owned the share is left as it was (it weighs nothing then).
func (w *Worker) updateShare(ctx context.Context, cl *kgo.Client) {
	w.mu.Lock()
	owned := 0
	for _, p := range w.parts {
		if !p.reward {
			owned++
		}
	}
	w.mu.Unlock()
	if owned == 0 {
		return
	}
	if owned > w.inputPartitions && cl != nil {
		// Unknown yet, or partitions were added: ask the cluster.
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		td, err := kadm.NewClient(cl).ListTopics(mctx, w.cfg.topics.Input...)
		cancel()
		total := 0
		for _, t := range w.cfg.topics.Input {
			if d, ok := td[t]; ok && d.Err == nil {
				total += len(d.Partitions)
			}
		}
		if err != nil || total == 0 {
			w.log.Warn().Err(err).Msg("input partition count unknown; flow share unchanged")
			return
		}
		w.inputPartitions = total
	}
	f := min(float64(owned)/float64(w.inputPartitions), 1)
	w.setShare(f)
	w.log.Debug().Int("owned", owned).Int("of", w.inputPartitions).Float64("share", f).Msg("flow share")
}

func (w *Worker) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	w.log.Warn().Msg("partitions lost (session expired or fenced)")
	w.revoke(ctx, cl, lost, false, true)
}

// stopPartitions stops ps; lost: the group took them from this worker
// (see partition.lose), else they were handed over or the worker stops.
func (w *Worker) stopPartitions(ps []*partition, lost bool) {
	now := w.cfg.now()
	for _, p := range ps {
		close(p.quit)
		p.cancel()
		close(p.in)
		<-p.done
		p.flushCounts()
		if lost {
			p.lose(now)
		} else {
			p.close(now)
		}
		w.m.consumerLag.DeleteLabelValues(p.topic, fmt.Sprint(p.id))
	}
}

// closeAll stops the partitions the group did not revoke on close.
func (w *Worker) closeAll() {
	w.mu.Lock()
	var ps []*partition
	for tp, p := range w.parts {
		ps = append(ps, p)
		delete(w.parts, tp)
	}
	clear(w.lastCommitted)
	w.mu.Unlock()
	w.stopPartitions(ps, false)
	w.unpark(nil, ps)
	w.m.assigned.Set(0)
}

// partitionCounts returns the partition count of topics; a topic it
// cannot learn is left out (the stages then know no count: the caps skip
// their keying check).
func (w *Worker) partitionCounts(ctx context.Context, cl *kgo.Client, topics []string) map[string]int {
	out := make(map[string]int, len(topics))
	if cl == nil {
		return out
	}
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(mctx, topics...)
	for _, t := range topics {
		if d, ok := td[t]; ok && d.Err == nil && len(d.Partitions) > 0 {
			out[t] = len(d.Partitions)
		} else {
			w.log.Debug().Err(err).Str("topic", t).Msg("partition count unknown")
		}
	}
	return out
}

// authorization reports whether err is Kafka refusing an authorization,
// which retrying does not change.
func authorization(err error) bool {
	for _, e := range []error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
