package suite

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/stats"
)

// HostileParts is the input topic's partition count.
const HostileParts = 6

// HostileRun is one run of the suite: its names and processes.
type HostileRun struct {
	T                                           *testing.T
	Brokers                                     []string
	Conn                                        []kgo.Opt
	Adm                                         *kadm.Client
	Group, Events, Clicks, FramedTopic          string
	Stats, Caps, Control, Passed, Rejected, Dlq string
	Cfg                                         string
	Procs                                       []*Proc // every process started, for the log check
	Rows                                        []string
}

// Row notes one injection and what the workers did, for the test's log
// (the table of docs/operations.md, "Untrusted input").
func (h *HostileRun) Row(format string, args ...any) {
	h.Rows = append(h.Rows, fmt.Sprintf(format, args...))
	h.T.Logf("row: "+format, args...)
}

func (h *HostileRun) Cli(args ...string) *Proc {
	p := Start(h.T, args[0], args...)
	h.Procs = append(h.Procs, p)
	return p
}

// CliRun runs a throttler command to its end and returns its exit code,
// stdout and stderr.
func (h *HostileRun) CliRun(args ...string) (int, string, string) {
	h.T.Helper()
	p := h.Cli(args...)
	select {
	case <-p.Done:
	case <-time.After(90 * time.Second):
		h.T.Fatalf("%v did not end", args)
	}
	code := 0
	if p.Werr != nil {
		code = p.Cmd.ProcessState.ExitCode()
	}
	return code, p.Out.Text(), p.Err.Text()
}

func (h *HostileRun) Worker(name string) (*Proc, string) {
	h.T.Helper()
	p := Start(h.T, name, "run", "--config", h.Cfg, "--transactional-id", h.Group+"-"+name)
	h.Procs = append(h.Procs, p)
	return p, HttpAddr(h.T, p)
}

func RunHostileSuite(t *testing.T, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	g := "hostile-" + run
	h := &HostileRun{T: t, Brokers: brokers, Conn: []kgo.Opt{kgo.SeedBrokers(brokers...)}, Group: g,
		Events: g + ".events", Clicks: g + ".clicks", FramedTopic: g + ".framed",
		Stats: g + ".stats", Caps: g + ".caps", Control: g + ".changes",
		Passed: g + ".passed", Rejected: g + ".rejected", Dlq: g + ".dead-letter"}
	cl, err := kgo.NewClient(h.Conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	h.Adm = kadm.NewClient(cl)
	for topic, n := range map[string]int32{h.Events: HostileParts, h.Clicks: 2, h.FramedTopic: 2} {
		if _, err := h.Adm.CreateTopic(ctx, n, -1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	reg, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	var lookups atomic.Int64
	reg.Registry().Intercept(func(http.ResponseWriter, *http.Request) bool { lookups.Add(1); return false })
	// "open" is a window budget: its ledgers keep every pass for the
	// outcome's count (a period budget's counters of an ended period are
	// forgotten, and a partition restarted after its repair may hold
	// only those).
	begin := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	h.Cfg = WriteFile(t, g+".yaml", fmt.Sprintf(`brokers: [%s]
group: %s
topics:
  input: [%s, %s]
  rewards: [%s]
  output: %s
  rejected: %s
  partitions: %d
delivery: exactly-once
sync_interval: 500ms
commit_interval: 100ms
timeouts: {session: 6s, rebalance: 5s, heartbeat: 500ms, transaction: 10s}
fields: {budget: campaign, key: user, id: id}
format:
  topics: [{topic: %s, format: avro}]
schema_registry: {urls: [%s]}
dedup_window: 1000
rewards: {budget: campaign, value: value, max_value: 1000}
budgets:
  - {name: open, target: 1e12, begin: %s, end: %s}
  - {name: clicks, kind: rewards, target: 1e6, period: 1m}
caps:
  - {name: per-device, key: device, burst: 1000, rate: 1000000/1m}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, strings.Join(brokers, ", "), g, h.Events, h.FramedTopic, h.Clicks, h.Passed, h.Rejected, HostileParts, h.FramedTopic, reg.URL(),
		begin.Format(time.RFC3339), begin.Add(24*time.Hour).Format(time.RFC3339)))

	w1, a1 := h.Worker("w1")
	w2, a2 := h.Worker("w2")
	for _, a := range []string{a1, a2} {
		if !WaitFor(90*time.Second, func() bool { c, _, _ := FetchURL(t, "http://"+a+"/readyz", ""); return c == 200 }) {
			t.Fatalf("worker at %s not ready", a)
		}
	}
	tr := StartTraffic(t, h.Conn, h.Events, 5, 20*time.Millisecond) // 250 good events a second
	WaitPast(ctx, t, h.Adm, g, h.Events)                            // the traffic goes on: the group passes the ends of now

	injectedAt := time.Now()
	h.InjectStats(ctx)
	h.InjectControl(ctx)
	h.InjectEvents(ctx, tr)
	h.CheckWorkerHTTP(a1)

	// New owners restore every partition: w1 stops (w2 takes its
	// partitions), w1b starts, w2 stops (w1b takes the rest), w2b starts.
	if err := w1.Stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
		t.Fatalf("w1 after SIGTERM: %v", err)
	}
	w1b, b1 := h.Worker("w1b")
	if err := w2.Stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
		t.Fatalf("w2 after SIGTERM: %v", err)
	}
	w2b, b2 := h.Worker("w2b")
	workers := map[string]*Proc{b1: w1b, b2: w2b}

	parkedSrcs := []string{stats.SourceName(h.Events, 0), stats.SourceName(h.Events, 1), stats.SourceName(h.Events, 2), stats.SourceName(h.Events, 4)}
	// Both workers own partitions (the rebalances are over: the ten
	// partitions of the three input topics are shared), and the four
	// sources are parked: /readyz names them, the gauges count them.
	var readyz string
	var assigned, gauge float64
	if !WaitFor(2*time.Minute, func() bool {
		readyz, assigned, gauge = "", 0, 0
		for a := range workers {
			_, _, body := FetchURL(t, "http://"+a+"/readyz", "")
			readyz += string(body)
			_, _, m := FetchURL(t, "http://"+a+"/metrics", "")
			if Metric(m, "throttler_assigned_partitions") == 0 {
				return false
			}
			assigned += Metric(m, "throttler_assigned_partitions")
			gauge += Metric(m, "throttler_parked_partitions")
		}
		for _, src := range parkedSrcs {
			if !strings.Contains(readyz, src) {
				return false
			}
		}
		return assigned == HostileParts+4 && gauge == float64(len(parkedSrcs))
	}) {
		t.Fatalf("the four bad ledgers are not all parked (%v parked, %v partitions assigned); /readyz says:\n%s", gauge, assigned, readyz)
	}
	h.CheckParked(ctx, workers, parkedSrcs)
	h.CheckTools(ctx, parkedSrcs)

	// Repair: the workers start the parked partitions again.
	for _, src := range parkedSrcs {
		code, out, errOut := h.CliRun("ledger", "show", "--brokers", strings.Join(brokers, ","), "--stats-topic", h.Stats, "--group", g, src)
		if code != 0 || !strings.Contains(out, "PARKS") {
			t.Fatalf("ledger show %s: %d\n%s\n%s", src, code, out, errOut)
		}
		code, out, errOut = h.CliRun("ledger", "repair", "--brokers", strings.Join(brokers, ","), "--stats-topic", h.Stats, "--group", g, src)
		if code != 0 || !strings.Contains(out, "exact") || !strings.Contains(out, "written") {
			t.Fatalf("ledger repair %s: %d\n%s\n%s", src, code, out, errOut)
		}
	}
	for a := range workers {
		if !WaitFor(90*time.Second, func() bool { c, _, _ := FetchURL(t, "http://"+a+"/readyz", ""); return c == 200 }) {
			_, _, body := FetchURL(t, "http://"+a+"/readyz", "")
			t.Fatalf("worker at %s not ready after the repairs: %s", a, body)
		}
	}
	h.Row("repair: `throttler ledger repair` of the 4 parked sources -> exact, written; the workers started them again, /readyz 200")

	// The good traffic stops; everything is consumed.
	tr.End(t)
	for _, topic := range []string{h.Events, h.Clicks, h.FramedTopic} {
		WaitCommitted(ctx, t, h.Adm, g, topic)
	}
	h.CheckOutcome(ctx, workers, tr, injectedAt, lookups.Load())
	for _, p := range []*Proc{w1b, w2b} {
		if err := p.Stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.Name, err)
		}
	}
	h.CheckLogs()
	t.Logf("the table:\n%s", strings.Join(h.Rows, "\n"))
}
