package consumer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// TestWorkerPublishesStatus: a worker publishes its status on the stats
// topic (one record, whatever the budgets): every owned partition with its
// committed offset and lag, its commits and its dead letters.
func TestWorkerPublishesStatus(t *testing.T) {
	env := newTestEnv(t)
	start := time.Now()
	env.startWorker(t, "w1", TransactionalID("status-w1"))
	recs, _ := eventRecords(0, 400)
	env.produce(recs)
	env.waitCommitted("events")
	dead := len(env.readAll("dlq")["dlq"])

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	view, err := stats.NewView(ctx, "stats", []kgo.Opt{kgo.SeedBrokers(env.addrs...)})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	var ws stats.WorkerStatus
	done := func() bool {
		all := view.Workers()
		if len(all) != 1 {
			return false
		}
		ws = all[0]
		var committed int64
		for _, s := range ws.Sources {
			if strings.HasPrefix(s.Source, "events/") && s.Offset > 0 {
				committed += s.Offset
			}
		}
		return committed == 400 && ws.DeadLetters == uint64(dead)
	}
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("worker status never showed 400 committed events and %d dead letters: %+v", dead, ws)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if ws.Worker != "status-w1" || ws.Started.Before(start.Add(-time.Second)) || ws.SyncInterval != 200*time.Millisecond ||
		ws.Commits == 0 || ws.Aborted != 0 || len(ws.Sources) != inputPartitions+4 || ws.Omitted != 0 || dead == 0 {
		t.Fatalf("status %+v (dead letters in the topic: %d)", ws, dead)
	}
	for _, s := range ws.Sources {
		if s.Offset > 0 && (s.Lag != 0 || s.Committed.Before(ws.Started) || s.Committed.After(ws.At)) {
			t.Errorf("source %+v of a drained partition", s)
		}
	}
}
