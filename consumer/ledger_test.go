package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testwait"
	"github.com/throttler/throttler/stats"
)

// ledgers loads the committed ledger of every source from the stats topic
// "stats".
func (env *testEnv) ledgers() map[string]stats.LedgerState {
	env.t.Helper()
	return env.ledgersOf("stats")
}

// ledgersOf loads the committed ledger of every source from a stats topic.
func (env *testEnv) ledgersOf(topic string) map[string]stats.LedgerState {
	env.t.Helper()
	var sources []string
	for p := int32(0); p < inputPartitions; p++ {
		sources = append(sources, stats.SourceName("events", p))
	}
	for p := int32(0); p < 4; p++ {
		sources = append(sources, stats.SourceName("clicks", p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	states, err := stats.LoadLedgers(ctx, []kgo.Opt{kgo.SeedBrokers(env.addrs...)}, topic, sources...)
	if err != nil {
		env.t.Fatal(err)
	}
	return states
}

// TestLedgerLanesReleased runs events through a worker whose lanes are
// released after 300 ms without an event, then, once they were, more
// events: the ledgers still count exactly the outputs (lanes restored from
// them continue where they were). Meanwhile: the metric series of the
// budgets gone idle are deleted, idle partitions vouch for their counters
// (heartbeats), and the records of the kinds the ledger replaces (kind 1
// and 3) of the partitions the worker owns are tombstoned, those of a
// source nobody owns left alone.
func TestLedgerLanesReleased(t *testing.T) {
	env := newTestEnv(t)
	env.seedLegacy("events/0", "gone/0")
	const n = 2400
	recs, bad := eventRecords(0, n)
	env.produce(recs[:n/2])
	w := env.startWorker(t, "w", SyncInterval(100*time.Millisecond), CommitInterval(50*time.Millisecond),
		LaneIdle(300*time.Millisecond), SeriesIdle(time.Second))
	env.waitCommitted("events")
	if v, ok := gauge(t, w.w.Gatherer(), "throttler_passed_total", map[string]string{"budget": "a"}); !ok || v == 0 {
		t.Fatalf("passed_total of a: %v, %v", v, ok)
	}
	testwait.Eventually(t, "the idle lanes to be released, and their controllers dropped", func() bool {
		v, ok := gauge(t, w.w.Gatherer(), "throttler_open_lanes", nil)
		return ok && v == 0 && len(w.w.tree.Controllers()) == 0
	})
	testwait.Eventually(t, "the series of the idle budgets to be deleted", func() bool {
		_, a := gauge(t, w.w.Gatherer(), "throttler_passed_total", map[string]string{"budget": "a"})
		_, b := gauge(t, w.w.Gatherer(), "throttler_rejected_total", map[string]string{"budget": "b"})
		return !a && !b
	})
	idleSince := time.Now()
	testwait.Eventually(t, "an idle partition's heartbeat", func() bool {
		s, ok := w.w.view.Source("events/0")
		return ok && s.At.After(idleSince)
	})
	testwait.Eventually(t, "events/0's legacy records to be tombstoned", func() bool {
		return len(w.w.view.LegacyKeys("events/0")) == 0
	})
	if ks := w.w.view.LegacyKeys("gone/0"); len(ks) != 2 {
		t.Fatalf("the legacy records of a source nobody owns: %d keys left, want 2", len(ks))
	}
	env.produce(recs[n/2:])
	env.waitCommitted("events")
	w.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// seedLegacy writes, for each source, a kind-1 report of budget a and the
// kind-3 variant counts of ui/color, as workers before the ledger did, on
// the stats topic (created here).
func (env *testEnv) seedLegacy(sources ...string) {
	env.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := stats.EnsureTopics(ctx, env.adm, stats.StatsTopic("stats", inputPartitions)); err != nil {
		env.t.Fatal(err)
	}
	pub, err := stats.NewPublisher("stats")
	if err != nil {
		env.t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	var recs []*kgo.Record
	for _, src := range sources {
		rs, err := pub.Records([]flow.Report{{Budget: "a", Source: src, At: old, Since: old, Total: flow.Counters{Offered: 5, Passed: 5}}})
		if err != nil {
			env.t.Fatal(err)
		}
		vc, err := pub.VariantsRecord(stats.VariantCounts{Layer: "ui", Experiment: "color", Source: src, At: old, Counts: []stats.VariantCount{{Variant: "red", Count: 3, Keys: 3}}})
		if err != nil {
			env.t.Fatal(err)
		}
		recs = append(append(recs, rs...), vc)
	}
	env.produce(recs)
}

// TestLedgerCarryOver: a partition without a ledger continues from its
// checkpoint on the checkpoint topic of the versions before the ledger:
// the ledgers count the checkpoint's passes and offered events and those
// of the events processed since.
func TestLedgerCarryOver(t *testing.T) {
	env := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := stats.EnsureTopics(ctx, env.adm, stats.CheckpointTopic("ckpt", inputPartitions)); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Minute)
	cp, err := stats.CheckpointRecord("ckpt", 3, stats.Checkpoint{Source: "events/3", Offset: 0,
		Reports: []flow.Report{{Budget: "a", Since: since, Total: flow.Counters{Offered: 9, Passed: 7}}}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, cp).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const n = 1200
	recs, _ := eventRecords(0, n)
	env.produce(recs)
	w := env.startWorker(t, "w", WithTopics(Topics{Input: []string{"events"}, Output: "out", Rejected: "rejected",
		DeadLetter: "dlq", Stats: "stats", Checkpoints: "ckpt"}))
	env.waitCommitted("events")
	w.stop(t)
	got := env.readAll(append(outputTopics, "rejected")...)
	outputs := len(got["out"]) + len(got["out-red"]) + len(got["out-blue"])
	var passed, offered uint64
	for _, st := range env.ledgers() {
		for _, r := range st.Reports {
			passed += r.Total.Passed
			offered += r.Total.Offered
		}
	}
	if passed != uint64(outputs)+7 || offered != uint64(outputs+len(got["rejected"]))+9 {
		t.Fatalf("ledgers count %d passed and %d offered; the outputs hold %d passed and %d rejected, the checkpoint 7 and 9",
			passed, offered, outputs, len(got["rejected"]))
	}
}
