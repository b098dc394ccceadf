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
func (w *Worker) watchHangs(ctx context.Context, done chan<- struct{}) {
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hangs, err := hangtxn.Find(ctx, cl, w.hangScope(ctx, cl))
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
		for _, h := range again {
			if h.Known || h.Wait {
				continue // completed below; or decided, its producer to move on first
			}
			if k := h.Key(); !reported[k] && h.Why != "" {
				reported[k] = true
				w.m.hanging.WithLabelValues("unknown").Inc()
				w.log.Error().Str("hang", h.String()).
					Msg("a transaction Kafka left open holds a partition; its outcome is not known: see docs/kafka-notes.md (kafka-transactions.sh)")
			}
		}
		for _, h := range w.completeHangs(ctx, cl, again) {
			delete(seen, h.Key())
		}
	}
}

// hangScope returns what the worker looks at for hanging transactions:
// the topics it writes, and the group's partition of the consumer offsets
// topic, where a missing marker leaves the group's offsets pending and
// holds its members' offset fetches (left out while the topic does not
// exist yet).
func (w *Worker) hangScope(ctx context.Context, cl *kgo.Client) hangtxn.Scope {
	scope := hangtxn.Scope{}
	for _, t := range w.writtenTopics() {
		scope[t] = nil
	}
	if p, err := hangtxn.GroupPartition(ctx, cl, w.cfg.group); err == nil {
		scope[hangtxn.OffsetsTopic] = []int32{p}
	}
	return scope
}

// producerIDPatience is how long a new session waits for its producer ID
// (the brokers restarting) before it goes on without looking for its own
// hanging transactions.
const producerIDPatience = 30 * time.Second

// settleOwnHangs completes, before a new session produces, the
// transactions of the worker's own transactional id that Kafka left open
// (a broker that restarted while the last session's commit was ending).
// A record the session wrote to such a partition would join the open
// transaction, and the session's outcome would end both. The session's
// producer ID is taken first: that bumps the epoch past the open
// transaction's markers, and returns once the coordinator has finished
// it.
func (w *Worker) settleOwnHangs(ctx context.Context) {
	cl := w.sess.client()
	start := time.Now() // real time: the patience is for brokers coming back
	for {
		_, _, err := cl.ProducerID(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Since(start) >= producerIDPatience {
			w.log.Warn().Err(err).Msg("hanging transactions: no producer ID; not looked for")
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	hangs, err := hangtxn.Find(ctx, cl, w.hangScope(ctx, cl))
	var own []hangtxn.Hang
	for _, h := range hangs {
		if h.TxnID == w.cfg.txnID {
			own = append(own, h)
		}
	}
	if err == nil && len(own) > 0 {
		err = hangtxn.Decide(ctx, cl, w.cfg.clientOpts, own)
	}
	if err == nil {
		w.completeHangs(ctx, cl, own)
		return
	}
	if ctx.Err() == nil {
		w.log.Warn().Err(err).Msg("hanging transactions: looking for the worker's own failed")
	}
}

// completeHangs writes the markers of the hangs whose decision is known,
// and logs and counts what it did.
func (w *Worker) completeHangs(ctx context.Context, cl *kgo.Client, hangs []hangtxn.Hang) []hangtxn.Hang {
	completed, err := hangtxn.Complete(ctx, cl, hangs)
	for _, h := range completed {
		w.m.hanging.WithLabelValues("completed").Inc()
		w.log.Warn().Str("hang", h.String()).Msg("wrote the marker of a transaction Kafka left open")
	}
	if err != nil && ctx.Err() == nil {
		w.m.hanging.WithLabelValues("failed").Inc()
		w.log.Error().Err(err).
			Msg("hanging transactions: writing their markers failed (it takes the ClusterAction permission): see docs/kafka-notes.md")
	}
	return completed
}
