package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Compaction.
//
// kfake's compaction is not safe for transactional records, in two ways
// (TestKfakeCompactsOpenTransactions, TestKfakeDropsAbortMarkers):
//
//   - It compacts every batch of a partition but its newest, the batches of
//     transactions still open among them, where Kafka's log cleaner stops
//     at the last stable offset. A record of an open transaction then
//     supersedes the committed records of its key, and compaction deletes
//     them; when the transaction aborts, read_committed readers find no
//     record of the key at all.
//   - It drops the abort marker of a producer that has no record left in
//     the compacted range, but keeps the aborted transaction in the index
//     it answers read_committed fetches from. A reader that fetches across
//     that transaction skips every later transactional batch of the
//     producer in the partition, committed ones included, waiting for the
//     marker (kgo does, as Kafka's Java client does).
//
// On the stats topic, written in the workers' transactions, either loses
// ledgers: a partition's next owner starts from less than was committed,
// and the passes in between are counted nowhere. So kfake's own cleaner is
// off (log.cleaner.backoff.ms out of reach) and the broker compacts only
// when asked (Broker.Compact, SIGUSR1 of `throttler broker`) or every
// CompactionInterval when one is set, and then only at a moment when no
// partition of a compacted topic holds an open transaction. That rules
// out the first way; the second remains for transactional producers that
// write to the compacted topics after the compaction, which is why
// periodic compaction is off by default: compact once the workers have
// stopped. Retention (retention.ms, retention.bytes) is applied every
// retentionEvery.
//
// A gate on Produce makes the moment without an open transaction last:
// while the broker looks and compacts, transactional produce requests wait
// (kfake's SleepControl), so that no transaction adds a record between the
// look and the compaction. Other requests go on, EndTxn among them, so the
// transactions open when the gate closed still end. When the look finds an
// open transaction, the gate opens again and the broker looks again
// compactRetry later.

// cleanerOff is a log.cleaner.backoff.ms kfake's ticker never reaches
// (the largest whose time.Duration does not overflow).
const cleanerOff = math.MaxInt64 / int64(time.Millisecond)

// compactRetry is how long the broker waits to look again after a look
// found an open transaction in a compacted topic: commits end within
// milliseconds, so one interval rarely passes without a compaction.
const compactRetry = 20 * time.Millisecond

// compactor runs a broker's compactions (see above).
type compactor struct {
	c    *kfake.Cluster
	adm  *kadm.Client
	log  zerolog.Logger
	quit <-chan struct{} // closed when the broker stops

	mu   sync.Mutex // serialises the compactions
	gate sync.Mutex
	held chan struct{} // closed when the gate opens; nil while it is open
}

// newCompactor installs the gate on c's produce requests. quit closes
// when the broker stops.
func newCompactor(c *kfake.Cluster, adm *kadm.Client, log zerolog.Logger, quit <-chan struct{}) *compactor {
	g := &compactor{c: c, adm: adm, log: log, quit: quit}
	c.ControlKey(int16(kmsg.Produce), g.produce)
	return g
}

// produce holds a transactional produce request while the gate is closed,
// then lets kfake handle it.
func (g *compactor) produce(req kmsg.Request) (kmsg.Response, error, bool) {
	if r, ok := req.(*kmsg.ProduceRequest); ok && r.TransactionID != nil {
		g.gate.Lock()
		held := g.held
		g.gate.Unlock()
		if held != nil {
			g.c.SleepControl(func() { <-held })
		}
	}
	return nil, nil, false
}

// shut closes the gate.
func (g *compactor) shut() {
	g.gate.Lock()
	g.held = make(chan struct{})
	g.gate.Unlock()
}

// lift opens the gate, waking the requests it held.
func (g *compactor) lift() {
	g.gate.Lock()
	close(g.held)
	g.held = nil
	g.gate.Unlock()
}

// stop waits for a compaction in progress: taking mu is enough, since
// quit is closed before and later compactions fail on it (kfake's admin
// calls, which compactions make, block once the cluster is closed).
func (g *compactor) stop() {
	g.mu.Lock()
	g.mu.Unlock() //nolint:staticcheck // an empty section: waiting is the point
}

// retentionEvery is how often the broker applies retention.
const retentionEvery = 5 * time.Second

// run applies retention every retentionEvery and, when every is positive,
// compacts every every, until ctx ends.
func (g *compactor) run(ctx context.Context, every time.Duration) {
	retention := time.NewTicker(retentionEvery)
	defer retention.Stop()
	var compaction <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		compaction = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-retention.C:
			g.c.ApplyRetention()
		case <-compaction:
			cctx, cancel := context.WithTimeout(ctx, every)
			err := g.compact(cctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				g.log.Debug().Err(err).Msg("compaction skipped")
			}
		}
	}
}

// compact compacts once no compacted topic holds an open transaction,
// looking again every compactRetry until ctx ends or the broker stops.
func (g *compactor) compact(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		select {
		case <-g.quit:
			return errors.New("broker: compaction: the broker stopped")
		default:
		}
		done, err := g.try(ctx)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker: compaction: a compacted topic kept an open transaction: %w", ctx.Err())
		case <-g.quit:
		case <-time.After(compactRetry):
		}
	}
}

// try compacts, with the gate closed, unless a partition of a compacted
// topic holds an open transaction; it reports whether it compacted.
func (g *compactor) try(ctx context.Context) (bool, error) {
	g.shut()
	defer g.lift()
	topics, err := g.compacted(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range topics {
		for _, p := range g.c.PartitionInfos(t) {
			if p.LastStableOffset < p.HighWatermark {
				return false, nil
			}
		}
	}
	g.c.Compact() // and retention, on every topic
	return true, nil
}

// compacted returns the topics whose cleanup.policy compacts.
func (g *compactor) compacted(ctx context.Context) ([]string, error) {
	td, err := g.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("broker: compaction: list topics: %w", err)
	}
	names := td.Names()
	if len(names) == 0 {
		return nil, nil
	}
	rcs, err := g.adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("broker: compaction: describe topic configs: %w", err)
	}
	var out []string
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("broker: compaction: configs of %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil && strings.Contains(*c.Value, "compact") {
				out = append(out, rc.Name)
			}
		}
	}
	return out, nil
}
