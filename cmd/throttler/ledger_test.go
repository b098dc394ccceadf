package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// TestLedgerShowRepair writes a source's ledger as its owner would (in
// transactions, its input offsets committed with it), then a value of
// another major version over its heartbeat: 'ledger show' says a worker
// parks it and why, 'ledger repair' writes the good records' counters
// back (exact: the good heartbeat is still in the partition), after which
// 'ledger show' says it restores whole, with the owner's counters.
func TestLedgerShowRepair(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fixClock(t, statusAt)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("owner"), kgo.RecordPartitioner(stats.LedgerPartitioner(nil, "g.stats")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := stats.EnsureTopics(ctx, adm, stats.StatsTopic("g.stats", 4)); err != nil {
		t.Fatal(err)
	}
	var events []*kgo.Record
	for i := range 30 {
		events = append(events, &kgo.Record{Topic: "events", Partition: 2, Value: []byte{byte(i)}})
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.ProduceSync(ctx, events...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	l, err := stats.NewLedger("g.stats", stats.LedgerState{Source: "events/2", Offset: -1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range []stats.Changes{
		{Reports: []flow.Report{{Budget: "spring", Total: flow.Counters{Offered: 10, Passed: 7}}}},
		{}, // a heartbeat: the offset moved
	} {
		recs, err := l.Records(ch, int64(10*(i+1)), statusAt.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeTxn(ctx, []kgo.Opt{kgo.SeedBrokers(addr)}, "g.stats", recs); err != nil {
			t.Fatal(err)
		}
		l.Committed()
	}
	if _, err := adm.CommitOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "events", Partition: 2, Offset: 19})); err != nil {
		t.Fatal(err)
	}
	hb, _ := stats.LedgerKey("events/2", stats.LedgerHeartbeat, 0)
	if err := raw.ProduceSync(ctx, &kgo.Record{Topic: "g.stats", Partition: 2, Key: hb, Value: []byte{2, 0}}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	flags := []string{"--brokers", addr, "--stats-topic", "g.stats", "--group", "g", "events/2"}
	code, out, errOut := runCLI(t, ctx, append([]string{"ledger", "show"}, flags...)...)
	if code != 0 || !strings.Contains(out, "PARKS") || !strings.Contains(out, "major version 2") || !strings.Contains(out, "exact") {
		t.Fatalf("ledger show: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, ctx, append([]string{"ledger", "repair"}, flags...)...)
	if code != 0 || !strings.Contains(out, "written") {
		t.Fatalf("ledger repair: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, ctx, append([]string{"ledger", "show", "--json"}, flags...)...)
	var doc ledgerDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !doc.Restores || doc.Passed != 7 || doc.Offset != 20 {
		t.Fatalf("ledger show after the repair: %d %+v\n%s\n%s", code, doc, out, errOut)
	}
	code, out, _ = runCLI(t, ctx, append([]string{"ledger", "repair"}, flags...)...)
	if code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Fatalf("ledger repair again: %d\n%s", code, out)
	}
}
