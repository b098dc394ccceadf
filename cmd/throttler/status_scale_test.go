package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// Scale of TestStatusScale: budgets, sources (input partitions), and the
// budgets each source counted something for.
const (
	scaleBudgets   = 100_000
	scaleSources   = 48
	scalePerSource = 5_000
)

// TestStatusScale times `throttler status` over a stats topic holding what
// a deployment of 100,000 budgets leaves there: every budget's definition
// (kind 2) and the ledgers of 48 sources, each counting 5,000 budgets
// (240,000 non-zero pairs). It logs the time of each form of the command
// and asserts what they print, not their speed (the machine is shared).
// The broker runs in the test's process: the time includes its serving
// the topic; `throttler status` against the broker of a scale run (docs/
// scale.md) measures the command alone.
// Opt in with THROTTLER_STATUS_SCALE=1 (it writes the topic first: tens of
// seconds, a few hundred MB).
func TestStatusScale(t *testing.T) {
	if os.Getenv("THROTTLER_STATUS_SCALE") == "" {
		t.Skip("set THROTTLER_STATUS_SCALE=1 to time throttler status at 100,000 budgets")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fixClock(t, statusAt)
	addr := scaleStatsTopic(t, ctx, statusAt)
	var load [3]float64
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(b), &load[0], &load[1], &load[2])
	}
	for _, c := range []struct {
		name  string
		args  []string
		check func(stdout string) bool
	}{
		{"all, text", nil, func(s string) bool { return strings.Count(s, "\ncampaign/") == scaleBudgets }},
		{"all, JSON", []string{"--json"}, func(s string) bool { return strings.Count(s, `"name": "campaign/`) == scaleBudgets }},
		{"top 20", []string{"--top", "20"}, func(s string) bool {
			return strings.Count(s, "\ncampaign/") == 20 && strings.Contains(s, "20 of 100000 budgets")
		}},
		{"top 20, JSON", []string{"--top", "20", "--json"}, func(s string) bool {
			return strings.Count(s, `"name": "campaign/`) == 20 && strings.Contains(s, `"budgets_matched": 100000`)
		}},
		{"one budget", []string{"--budget", "campaign/004242"}, func(s string) bool { return strings.Count(s, "\ncampaign/") == 1 }},
		{"glob of 100", []string{"--budget", "campaign/0421*"}, func(s string) bool { return strings.Count(s, "\ncampaign/") == 100 }},
	} {
		t0 := time.Now()
		code, stdout, stderr := runCLI(t, ctx, append([]string{"status", "--brokers", addr, "--stats-topic", "scale.stats"}, c.args...)...)
		took := time.Since(t0)
		if code != 0 || !c.check(stdout) {
			t.Fatalf("%s: exit %d, %d bytes printed:\n%.2000s\n%s", c.name, code, len(stdout), stdout, stderr)
		}
		t.Logf("%-12s %5.2f s, %5.1f MB printed (load %.1f %.1f %.1f)", c.name, took.Seconds(),
			float64(len(stdout))/1e6, load[0], load[1], load[2])
	}
}

// scaleStatsTopic starts kfake and writes the topic of TestStatusScale:
// window budgets half-way through their hour at now, and the ledgers'
// snapshots of the sources.
func scaleStatsTopic(t *testing.T, ctx context.Context, now time.Time) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(stats.LedgerPartitioner(nil, "scale.stats")), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := stats.EnsureTopics(ctx, kadm.NewClient(cl), stats.StatsTopic("scale.stats", scaleSources)); err != nil {
		t.Fatal(err)
	}
	pub, _ := stats.NewPublisher("scale.stats")
	begin := now.Add(-30 * time.Minute)
	var recs []*kgo.Record
	for i := range scaleBudgets {
		r, err := pub.BudgetRecord(stats.BudgetDef{Budget: flow.Budget{Name: fmt.Sprintf("campaign/%06d", i), Target: 10000,
			Begin: begin, End: begin.Add(time.Hour)}, At: now})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for s := range scaleSources {
		l, err := stats.NewLedger("scale.stats", stats.LedgerState{Source: stats.SourceName("events", int32(s)), Offset: -1}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var reps []flow.Report
		for _, k := range rng.Perm(scaleBudgets)[:scalePerSource] {
			n := uint64(10 + rng.IntN(200))
			reps = append(reps, flow.Report{Budget: fmt.Sprintf("campaign/%06d", k),
				Total: flow.Counters{Offered: 2 * n, Passed: n}, InPeriod: flow.Counters{Offered: 2 * n, Passed: n}})
		}
		lr, err := l.Records(stats.Changes{Reports: reps}, 1000, now)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, lr...)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return addr
}
