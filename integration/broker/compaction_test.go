package broker

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"

	. "github.com/throttler/throttler/integration/suite"
)

// The stats topic compacted by Apache Kafka's log cleaner while
// exactly-once workers run, one of them SIGKILLed (its open transaction
// leaves aborted records): the cleaner looks every 500 ms, and the stats
// topic, created beforehand, rolls segments every 2 s and has any dirty
// share cleanable, so records leave the topic during the run. Then the workers stop, and the passes counted from the
// compacted topic (the stats view and the ledgers, which is what a
// starting worker loads) equal those in the output topics; two new
// workers start from it and consume more input, and the counts still
// equal the outputs, the budget not overspent. It runs on Apache Kafka
// only: kfake's compaction is not safe for transactional records
// (docs/kafka-notes.md).
func TestStatsTopicCompactedThenRebuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("a 70 s run across processes")
	}
	OnBrokers(t, KafkaOnly, func(t *testing.T, k BrokerKind) {
		brk := OwnCluster(t, k, 12, []string{"--compaction-interval", "500ms"},
			kafkabroker.Compaction(500*time.Millisecond, 2*time.Second, 0.01))
		const partitions, window = 12, 50 * time.Second
		addr, input, group := brk.Addr, brk.Name("events"), brk.Name("cmp")
		stats := group + ".stats"
		target := 20000
		begin := time.Now().Add(8 * time.Second).Truncate(time.Second)
		end := begin.Add(window)
		cfg := GroupConfig(t, k, addr, group, input, "exactly-once", partitions, target, begin, end)
		load := func(name string, until time.Time, seed int) *Proc {
			gen := Start(t, name, "loadgen", "--brokers", addr, "--topic", input, "--partitions", "12",
				"--rate", "1000", "--duration", time.Until(until).Round(time.Second).String(),
				"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", fmt.Sprint(seed))
			WaitProducing(t, gen, addr, input)
			return gen
		}
		worker := func(name string) *Proc {
			return Start(t, name, "run", "--config", cfg, "--transactional-id", name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		adm, closeAdm := Admin(t, addr)
		defer closeAdm()

		// The stats topic as an operator would create it for compaction
		// to show within a minute: workers create it with segment.ms of
		// 10 minutes, and Kafka cleans closed segments only.
		CreateTopic(ctx, t, addr, stats, partitions, map[string]*string{
			"cleanup.policy": kadm.StringPtr("compact"), "segment.ms": kadm.StringPtr("2000"),
			"min.cleanable.dirty.ratio": kadm.StringPtr("0.01")})

		// First half: three workers, one SIGKILLed and restarted.
		gen := load("loadgen-1", begin.Add(window/2), 21)
		workers := []*Proc{worker("w0"), worker("w1"), worker("w2")}
		time.Sleep(time.Until(begin.Add(10 * time.Second))) // real time: the kill's place in the window
		_ = workers[1].Cmd.Process.Signal(syscall.SIGKILL)
		<-workers[1].Done
		workers[1] = worker("w1")
		LoadDone(t, gen)
		if !WaitFor(60*time.Second, func() bool { return CaughtUp(ctx, adm, group, input) }) {
			t.Fatal("the group did not consume the first half")
		}
		// The cleaner has removed records once the topic holds fewer
		// records than its offsets span.
		var kept, span int64
		if !WaitFor(90*time.Second, func() bool {
			kept, span = TopicRecords(ctx, t, addr, stats)
			return kept < span
		}) {
			t.Fatalf("the stats topic was not compacted: %d records over %d offsets", kept, span)
		}
		t.Logf("t=%4.1fs the stats topic holds %d records over %d offsets (compacted)", time.Since(begin).Seconds(), kept, span)
		time.Sleep(2500 * time.Millisecond) // real time: one more stats interval of idle workers (see TestCrashRecovery)
		for _, w := range workers {
			if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
				t.Errorf("%s after SIGTERM: %v", w.Name, err)
			}
		}
		check := func(when string) {
			inputs := ReadTopics(ctx, t, addr, input)[input]
			tl := Account(inputs, ReadTopics(ctx, t, addr, GroupTopics(group)...), "id", "campaign")
			inStats, inLedgers := CountedPasses(ctx, t, addr, stats, input, partitions, "campaign")
			t.Logf("%s: %v; passes in the stats topic %d, in the ledgers %d", when, tl, inStats, inLedgers)
			if len(tl.Lost) > 0 || tl.Duplicates > 0 || tl.Unknown > 0 {
				t.Errorf("%s: %d ids lost, %d duplicated, %d unknown", when, len(tl.Lost), tl.Duplicates, tl.Unknown)
			}
			if tl.Passes == 0 {
				t.Errorf("%s: no pass: the run exercised nothing", when)
			}
			if inStats != uint64(tl.Passes) || inLedgers != uint64(tl.Passes) {
				t.Errorf("%s: counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", when, inStats, inLedgers, tl.Passes)
			}
			if tl.Passes > target+target/200 {
				t.Errorf("%s: %d passes for a target of %d", when, tl.Passes, target)
			}
		}
		check("after the first half, from the compacted topic")

		// Second half: two new workers start from the compacted topic.
		gen = load("loadgen-2", end.Add(2*time.Second), 22)
		workers = []*Proc{worker("w3"), worker("w4")}
		LoadDone(t, gen)
		if !WaitFor(60*time.Second, func() bool { return CaughtUp(ctx, adm, group, input) }) {
			t.Fatal("the group did not consume the second half")
		}
		time.Sleep(2500 * time.Millisecond) // real time: as above
		for _, w := range workers {
			if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
				t.Errorf("%s after SIGTERM: %v", w.Name, err)
			}
		}
		kept, span = TopicRecords(ctx, t, addr, stats)
		t.Logf("at the end the stats topic holds %d records over %d offsets", kept, span)
		check("at the end")
	})
}
