package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recoverDataDir repairs, before kfake loads it, what a SIGKILL leaves in
// the data dir and kfake would get wrong: the producers' sequence windows
// (seqwindows.go) and the open transactions (recoverOpenTxns).
func recoverDataDir(ctx context.Context, c *cfg) error {
	sc, err := scanDataDir(c.dataDir, resumedTxns(c.dataDir))
	if err != nil {
		return fmt.Errorf("broker: scan data dir: %w", err)
	}
	rebuilt, err := rebuildSeqWindows(c.dataDir, sc)
	if err != nil {
		return fmt.Errorf("broker: rebuild sequence windows: %w", err)
	}
	if rebuilt {
		c.log.Warn().Int("windows", len(sc.windows)).Msg("broker: segments written after the last save: producers' sequence windows rebuilt from the log")
	}
	_, err = recoverOpenTxns(ctx, c, sc)
	return err
}

// recoverOpenTxns closes, before the broker serves anyone, the
// transactions its data dir holds open after a crash: those of producers
// that were in a transaction when the broker was SIGKILLed. (A graceful
// stop saves its open transactions in session_state.json, and kfake
// resumes them: those are left alone.)
//
// Left to itself kfake (full replay of the partition after a crash) only
// lists such a transaction as aborted, with no abort marker, and bumps its
// producer's epoch in memory. A read_committed kgo reader (as Java's)
// drops a producer's transactional batches from the first offset of a
// listed aborted transaction to that producer's next abort marker: with no
// marker, it drops the producer's later, committed transactions too,
// whenever they come in the same fetch. And killed again before a
// graceful stop, kfake replays the unmarked batches as part of the
// producer's next committed transaction, which makes them visible.
//
// So the broker first runs kfake on the data dir alone, on a private
// loopback listener, after removing the snapshots of the partitions
// concerned (kfake then replays them: it lists the transaction as aborted
// and bumps the epoch); it fences each producer once more through
// InitProducerID with its transactional id (persisted, and two epochs
// ahead of the producer's, so that the producer's EndTxn is not taken for
// the retry of its previous one), writes an abort marker for each open
// transaction in each of its partitions, and stops that kfake gracefully.
// The records stay aborted whatever happens next, and the producer's
// owner learns it was fenced.
//
// A transaction whose commit was cut by the kill (markers written in some
// of its partitions, not in others; its offsets are never committed, since
// kfake applies them last) is aborted where it has no marker: its outputs
// are re-made by the re-processing of its input, so the partitions already
// marked get duplicates. The window is kfake's handling of one EndTxn.
func recoverOpenTxns(ctx context.Context, c *cfg, sc *dirScan) (int, error) {
	open, dirs := sc.open, sc.openDirs
	if len(open) == 0 {
		return 0, nil
	}
	for _, d := range dirs {
		if err := os.Remove(filepath.Join(d, "snapshot.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(c.dataDir), kfake.WithLogger(kfakeLogger{c.log}))
	if err != nil {
		return 0, fmt.Errorf("broker: start kfake to close open transactions: %w", err)
	}
	defer cluster.Close() // saves the markers and epochs
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("broker: list transactions: %w", err)
	}
	txnIDs := map[int64]string{}
	for _, t := range listed {
		txnIDs[t.ProducerID] = t.TxnID
	}
	var markers []kadm.TxnMarkers
	for pid, t := range open {
		epoch := t.epoch + 1
		if id, ok := txnIDs[pid]; ok {
			if epoch, err = fence(ctx, cl, id, t.epoch+2); err != nil {
				return 0, err
			}
		} else {
			c.log.Warn().Int64("producer_id", pid).Msg("broker: open transaction of an unknown transactional id; aborting it without fencing its producer")
		}
		ts := kadm.TopicsSet{}
		for topic, ps := range t.partitions {
			ts.Add(topic, ps...)
		}
		markers = append(markers, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Topics: ts})
	}
	resps, err := adm.WriteTxnMarkers(ctx, markers...)
	if err != nil {
		return 0, fmt.Errorf("broker: write abort markers: %w", err)
	}
	for _, r := range resps {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				// A topic deleted since is no longer read by anyone.
				if p.Err != nil && !errors.Is(p.Err, kerr.UnknownTopicOrPartition) {
					return 0, fmt.Errorf("broker: abort marker for producer %d in %s/%d: %w", p.ProducerID, p.Topic, p.Partition, p.Err)
				}
			}
		}
	}
	c.log.Warn().Int("transactions", len(open)).Int("partitions", len(dirs)).
		Msg("broker: aborted the transactions left open in the data dir and fenced their producers")
	return len(open), nil
}

// fence bumps the epoch of transactional id txnID with InitProducerID
// until it is at least atLeast, and returns it.
func fence(ctx context.Context, cl *kgo.Client, txnID string, atLeast int16) (int16, error) {
	for range 4 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = int32(time.Minute.Milliseconds())
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return 0, fmt.Errorf("broker: fence transactional id %q: %w", txnID, err)
		}
		if resp.ProducerEpoch >= atLeast {
			return resp.ProducerEpoch, nil
		}
	}
	return 0, fmt.Errorf("broker: fence transactional id %q: epoch still below %d", txnID, atLeast)
}
