package consumer

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/hangtxn"
)

// hangCheckInterval is how often an exactly-once worker looks for
// transactions Kafka left open on the topics it writes and reads
// (internal/hangtxn).
const hangCheckInterval = 15 * time.Second

// watchHangs looks, every hangCheckInterval, for partitions of the topics
// the worker writes (and the group's partition of the consumer offsets
// topic) whose last stable offset a transaction holds that its
// coordinator has finished without writing the partition's marker (Kafka
// does so when it restarts while a commit's markers are in flight). A
// hang found at two checks in a row, with the same producer, epoch and
// offset, gets the marker the coordinator logged: read_committed readers
// of the partition (this worker's ledger loads, the group's downstream
// consumers) go on. A hang whose decision is not in the transaction state
// topic is logged once with what an operator can do; it is never guessed.
func (w *Worker) watchHangs(ctx context.Context, topics []string, done chan<- struct{}) {
	defer close(done)
	cl, err := kgo.NewClient(w.cfg.clientOpts...)
	if err != nil {
		w.log.Error().Err(err).Msg("hanging transactions: no client; not watched")
		return
	}
	defer cl.Close()
	t := time.NewTicker(hangCheckInterval)
	defer t.Stop()
	seen := map[string]bool{}
	reported := map[string]bool{}
	var lastErr string
	scope := hangtxn.Scope{}
	for _, t := range topics {
		scope[t] = nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, ok := scope[hangtxn.OffsetsTopic]; !ok {
			// The group's offsets: a transaction whose marker is missing
			// there holds the group's offset fetches.
			if p, err := hangtxn.GroupPartition(ctx, cl, w.cfg.group); err == nil {
				scope[hangtxn.OffsetsTopic] = []int32{p}
			}
		}
		hangs, err := hangtxn.Find(ctx, cl, scope)
		var again []hangtxn.Hang
		now := map[string]bool{}
		for _, h := range hangs {
			now[h.Key()] = true
			if seen[h.Key()] {
				again = append(again, h)
			}
		}
		seen = now
		for k := range reported {
			if !now[k] {
				delete(reported, k)
			}
		}
		if err == nil && len(again) > 0 {
			err = hangtxn.Decide(ctx, cl, w.cfg.clientOpts, again)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != lastErr {
			w.log.Warn().Err(err).Msg("hanging transactions: looking for them failed")
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		var ready []hangtxn.Hang
		for _, h := range again {
			if h.Known {
				ready = append(ready, h)
				continue
			}
			if h.Wait {
				continue // decided; its producer has to move on first
			}
			if k := h.Key(); !reported[k] && h.Why != "" {
				reported[k] = true
				w.m.hanging.WithLabelValues("unknown").Inc()
				w.log.Error().Str("hang", h.String()).
					Msg("a transaction Kafka left open holds a partition; its outcome is not known: see docs/kafka-notes.md (kafka-transactions.sh)")
			}
		}
		if len(ready) == 0 {
			continue
		}
		completed, err := hangtxn.Complete(ctx, cl, ready)
		for _, h := range completed {
			w.m.hanging.WithLabelValues("completed").Inc()
			w.log.Warn().Str("hang", h.String()).Msg("wrote the marker of a transaction Kafka left open")
			delete(seen, h.Key())
		}
		if err != nil && ctx.Err() == nil {
			w.m.hanging.WithLabelValues("failed").Inc()
			w.log.Error().Err(err).Int("hangs", len(ready)).
				Msg("hanging transactions: writing their markers failed (it takes the ClusterAction permission): see docs/kafka-notes.md")
		}
	}
}
