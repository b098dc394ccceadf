package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/internal/tools/loadgen"
	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

// statusAt is the instant the status tests write and read at: the
// commands' clock is fixed there, so that a period budget's period does
// not depend on when the test runs.
var statusAt = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

// fixClock fixes the commands' clock at at for the test.
func fixClock(t *testing.T, at time.Time) {
	saved := clock
	clock = func() time.Time { return at }
	t.Cleanup(func() { clock = saved })
}

// statusCluster starts kfake with a stats topic holding what two workers
// would publish at now: a window budget that ended (ideal = target), a
// period budget, a fair experiment and a skewed one, over three sources.
func statusCluster(t *testing.T, ctx context.Context, now time.Time) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := stats.EnsureTopics(ctx, kadm.NewClient(cl), stats.StatsTopic("g.stats", 3)); err != nil {
		t.Fatal(err)
	}
	pub, _ := stats.NewPublisher("g.stats")
	begin, end := now.Add(-2*time.Hour), now.Add(-time.Hour)
	var recs []*kgo.Record
	add := func(r *kgo.Record, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	add(pub.BudgetRecord(stats.BudgetDef{Budget: flow.Budget{Name: "spring", Target: 6000, Begin: begin, End: end}, At: now}))
	add(pub.BudgetRecord(stats.BudgetDef{Budget: flow.Budget{Name: "hourly", Target: 100, Period: 1000 * time.Hour}, At: now}))
	idx := now.UnixNano() / int64(1000*time.Hour)
	for i, src := range []string{"events/0", "events/1", "events/2"} {
		// fair: a 50/50 split counted 24,950 / 25,050 keys in all, its
		// events skewed by heavy keys; skewed: a 50/50 split counted
		// 26,000 / 24,000 keys, one event each.
		red, blue := []uint64{8000, 8000, 8950}[i], []uint64{8000, 9000, 8050}[i]
		a := []uint64{9000, 9000, 8000}[i]
		add(ledgerSnapshot("g.stats", src, now, []flow.Report{
			{Budget: "spring", Total: flow.Counters{Offered: 4000, Passed: 2000}, InPeriod: flow.Counters{Offered: 4000, Passed: 2000}},
			{Budget: "hourly", Period: idx, InPeriod: flow.Counters{Offered: 100, Passed: uint64(10 * (i + 1))}},
		}, []stats.VariantCounts{
			{Layer: "ui", Experiment: "color", Counts: []stats.VariantCount{{Variant: "red", Count: 3 * red, Keys: red}, {Variant: "blue", Count: 2 * blue, Keys: blue}}},
			{Layer: "skew", Experiment: "arm", Counts: []stats.VariantCount{{Variant: "a", Count: a, Keys: a}, {Variant: "b", Count: 8000, Keys: 8000}}},
		}))
		add(ledgerSnapshot("g.stats", src+"old", now, []flow.Report{
			{Budget: "hourly", Period: idx - 1, InPeriod: flow.Counters{Offered: 100, Passed: 99}}, // an earlier period: not counted
		}, nil))
	}
	add(pub.ExperimentRecord(stats.ExperimentDef{Layer: "ui", Experiment: "color", At: now, Variants: []stats.VariantDef{
		{Name: "red", Weight: 0.5, Topic: "out-red", Limit: splitter.LimitBudget("ui", "color", "red"), Fallback: "output"}, {Name: "blue", Weight: 0.5, Topic: "out-blue"}}}))
	add(pub.ExperimentRecord(stats.ExperimentDef{Layer: "skew", Experiment: "arm", At: now, Variants: []stats.VariantDef{
		{Name: "a", Weight: 0.5}, {Name: "b", Weight: 0.5}}}))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// ledgerSnapshot returns the record of source's whole ledger in one
// snapshot chunk at instant at: its budget entries and variant counts.
func ledgerSnapshot(topic, source string, at time.Time, reports []flow.Report, variants []stats.VariantCounts) (*kgo.Record, error) {
	k, v, err := stats.EncodeLedger(stats.LedgerRecord{Source: source, Part: stats.LedgerSnapshot, Chunks: 1, Seq: 1, At: at, Offset: 1,
		Reports: reports, Variants: variants})
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: topic, Key: k, Value: v}, nil
}

func TestStatusCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fixClock(t, statusAt)
	addr := statusCluster(t, ctx, statusAt)

	code, stdout, stderr := runCLI(t, ctx, "status", "--brokers", addr, "--stats-topic", "g.stats", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, stderr)
	}
	var st clusterstatus.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if st.Version != 1 || st.StatsTopic != "g.stats" || len(st.Budgets) != 2 || len(st.Experiments) != 2 || st.Mismatches != 1 {
		t.Fatalf("status: %s", stdout)
	}
	hourly, spring := st.Budgets[0], st.Budgets[1]
	if spring.Name != "spring" || spring.Achieved != 6000 || spring.Ideal != 6000 || spring.Deviation != 0 ||
		spring.PassRate == nil || *spring.PassRate != 0.5 || spring.TimeLeftSeconds != 0 || spring.Sources != 3 {
		t.Errorf("spring: %+v", spring)
	}
	if hourly.Name != "hourly" || hourly.Achieved != 60 || hourly.Offered != 300 || hourly.PeriodSeconds != 3600000 ||
		hourly.TimeLeftSeconds <= 0 || hourly.Ideal <= 0 || hourly.Ideal >= 100 {
		t.Errorf("hourly: %+v", hourly)
	}
	skew, ui := st.Experiments[0], st.Experiments[1]
	fair := splitter.CheckSRM([]uint64{24950, 25050}, []float64{1, 1})
	if ui.Layer != "ui" || ui.Keys != 50000 || ui.Events != 3*24950+2*25050 || ui.SRM.Mismatch || !ui.SRM.Checked || math.Abs(ui.SRM.P-fair.P) > 1e-12 ||
		!ui.SRMEvents.Mismatch || ui.Variants[1].Name != "red" || ui.Variants[1].Keys != 24950 || ui.Variants[1].Limit == "" || ui.Sources != 3 {
		t.Errorf("ui/color: %+v", ui)
	}
	if skew.Layer != "skew" || !skew.SRM.Mismatch || skew.SRM.P > 1e-10 || *skew.Variants[0].Share != 0.52 {
		t.Errorf("skew/arm: %+v", skew)
	}
	t.Logf("ui/color p %.4g, skew/arm p %.3g", ui.SRM.P, skew.SRM.P)

	prof := filepath.Join(t.TempDir(), "status.prof")
	code, stdout, stderr = runCLI(t, ctx, "status", "--brokers", addr, "--stats-topic", "g.stats", "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("--cpuprofile %s: %v, %v", prof, st, err)
	}
	t.Logf("text output:\n%s", stdout)
	for _, want := range []string{"spring", "6000", "+0.00%", "0.5000", "hourly", "ui/color", "red", "49.90%", "over limit -> output", "skew/arm", clusterstatus.MismatchMark} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	if strings.Count(stdout, clusterstatus.MismatchMark) != 1 {
		t.Errorf("want one mismatch mark:\n%s", stdout)
	}
}

func TestStatusErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fixClock(t, statusAt)
	addr := statusCluster(t, ctx, statusAt)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"status"}, 2, "--brokers: must list at least one broker"},
		{[]string{"status", "--brokers", addr, "--stats-topic", ""}, 2, "--stats-topic: must not be empty"},
		{[]string{"status", "--brokers", addr, "--timeout", "0s"}, 2, "--timeout: must be positive"},
		{[]string{"status", "--brokers", addr, "--json=maybe"}, 2, "--json"},
		{[]string{"status", "--brokers", addr, "extra"}, 2, "unexpected argument"},
		{[]string{"status", "--brokers", addr, "--cpuprofile", t.TempDir()}, 2, "is a directory"},
		{[]string{"status", "--brokers", addr, "--stats-topic", "nope"}, 1, `stats topic "nope" not found`},
	} {
		code, _, stderr := runCLI(t, ctx, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

// TestRunThenStatus runs a worker whose config has an experiment with a
// variant limit, sends it events, and reads what it published with
// status: the budget and the limit's budget, the experiment and its
// counts.
func TestRunThenStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Partitions(3), broker.SeedTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
brokers: [%q]
group: status-test
topics: {input: [events], output: passed, rejected: rejected}
sync_interval: 200ms
fields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - {name: a, target: 1000000000, period: 1h}
layers:
  - name: ui
    experiments:
      - name: color
        allocation: 100
        variants:
          - {name: red, weight: 1, topic: passed.red, limit: {target: 1000000, period: 1h, fallback: rejected}}
          - {name: blue, weight: 1, topic: passed.blue}
`, b.Addr()))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- dispatch(runCtx, []string{"run", "--config", cfg, "--http", "127.0.0.1:0"}, io.Discard, &stderr)
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g, err := loadgen.New(loadgen.Config{Seed: 5, Budgets: []loadgen.Budget{{Name: "a", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var st clusterstatus.Status
	ok := poll(ctx, func() bool {
		if _, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{Topic: "events", Count: 20, Rate: 200}); err != nil {
			t.Fatal(err)
		}
		code, stdout, _ := runCLI(t, ctx, "status", "--brokers", b.Addr(), "--stats-topic", "status-test.stats", "--json")
		if code != 0 || json.Unmarshal([]byte(stdout), &st) != nil {
			return false
		}
		return len(st.Budgets) == 2 && len(st.Experiments) == 1 && st.Experiments[0].Events > 0 && st.Budgets[0].Passed > 0
	})
	if !ok {
		t.Fatalf("status never showed the worker's budgets and counts: %+v\n%s", st, stderr.String())
	}
	a, lim, x := st.Budgets[0], st.Budgets[1], st.Experiments[0]
	if a.Name != "a" || lim.Name != "variant:ui/color/red" || lim.Variant != "ui/color/red" || lim.Target != 1e6 || lim.PeriodSeconds != 3600 {
		t.Errorf("budgets: %+v", st.Budgets)
	}
	if x.Layer != "ui" || x.Experiment != "color" || len(x.Variants) != 2 || x.Variants[1].Limit != lim.Name || x.Variants[1].Fallback != "rejected" ||
		x.Events != x.Variants[0].Count+x.Variants[1].Count || x.Keys == 0 || x.Keys > x.Events {
		t.Errorf("experiment: %+v", x)
	}
	stop()
	if code := <-codeCh; code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
}
