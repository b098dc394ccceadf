package consumer

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// workerStatus is what the worker publishes about itself every sync
// interval (stats kind 6, for `throttler dashboard`): one record per
// worker, whatever the budgets. Poll loop only.
type workerStatus struct {
	started          time.Time
	commits, aborted uint64
}

// statusRecord returns the worker's status record: its owned partitions
// (parts, idle) with their lag and last commit, and its counters. It is
// written in the transaction, so a status that is seen was committed.
func (w *Worker) statusRecord(now time.Time, parts []*partition) (*kgo.Record, error) {
	ws := stats.WorkerStatus{
		Worker: w.cfg.txnID, At: now, Started: w.status.started, SyncInterval: w.cfg.syncInterval,
		Commits: w.status.commits, Aborted: w.status.aborted, DeadLetters: w.m.deadLetters.Load(),
		Sources: make([]stats.SourceStatus, 0, len(parts)),
	}
	for _, p := range parts {
		ws.Sources = append(ws.Sources, stats.SourceStatus{Source: p.source, Lag: p.lagRecords, Offset: p.commitOffset, Committed: p.committedAt})
	}
	for src, reason := range w.parkedReasons() {
		ws.Parked = append(ws.Parked, stats.ParkedSource{Source: src, Reason: reason})
	}
	return w.pub.WorkerRecord(ws)
}
