package integration

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// The hostile-input suite: records no producer of throttler writes, on
// every topic throttler reads (input, rewards, stats, control, caps), and
// requests to its HTTP servers, sent to two live `throttler run` workers
// under steady good traffic. docs/operations.md ("Untrusted input") says
// what each one does; the suite checks it, and then that both workers are
// alive and delivering, that no good event is lost or duplicated
// (read_committed), that the partitions whose ledgers cannot be restored
// were parked and reported and, once repaired (`throttler ledger repair`),
// count exactly what the outputs hold, that no log line passes 64 KiB, and
// that `throttler status --json` and every dashboard endpoint answer valid
// JSON within 2 s (a generous deadline, not a speed check), the dashboard
// back to idle after.

// hostileParts is the input topic's partition count.
const hostileParts = 6

// TestHostileKfake runs the suite on `throttler broker` (kfake) as a
// process. Compaction is off: kfake compacts records of open transactions
// (docs/kafka-notes.md), and the suite reads the stats topic whole.
func TestHostileKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-minute run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker
	_, addr := startBroker(t, hostileParts, "--compaction-interval", "1h")
	runHostileSuite(t, []string{addr})
}

// TestHostileBrokers runs the suite against the brokers of
// THROTTLER_TEST_BROKERS (comma-separated host:port, plaintext), e.g. an
// Apache Kafka cluster; it skips when the variable is not set. Its topics
// and group carry a unique suffix, so a cluster may run it again.
func TestHostileBrokers(t *testing.T) {
	brokers := os.Getenv("THROTTLER_TEST_BROKERS")
	if brokers == "" || testing.Short() {
		t.Skip("THROTTLER_TEST_BROKERS not set")
	}
	runHostileSuite(t, strings.Split(brokers, ","))
}

// hostileRun is one run of the suite: its names and processes.
type hostileRun struct {
	t                                           *testing.T
	brokers                                     []string
	conn                                        []kgo.Opt
	adm                                         *kadm.Client
	group, events, clicks, framedTopic          string
	stats, caps, control, passed, rejected, dlq string
	cfg                                         string
	procs                                       []*proc // every process started, for the log check
	rows                                        []string
}

// row notes one injection and what the workers did, for the test's log
// (the table of docs/operations.md, "Untrusted input").
func (h *hostileRun) row(format string, args ...any) {
	h.rows = append(h.rows, fmt.Sprintf(format, args...))
	h.t.Logf("row: "+format, args...)
}

func (h *hostileRun) cli(args ...string) *proc {
	p := start(h.t, args[0], args...)
	h.procs = append(h.procs, p)
	return p
}

// cliRun runs a throttler command to its end and returns its exit code,
// stdout and stderr.
func (h *hostileRun) cliRun(args ...string) (int, string, string) {
	h.t.Helper()
	p := h.cli(args...)
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		h.t.Fatalf("%v did not end", args)
	}
	code := 0
	if p.werr != nil {
		code = p.cmd.ProcessState.ExitCode()
	}
	return code, p.out.text(), p.err.text()
}

func (h *hostileRun) worker(name string) (*proc, string) {
	h.t.Helper()
	p := start(h.t, name, "run", "--config", h.cfg, "--transactional-id", h.group+"-"+name)
	h.procs = append(h.procs, p)
	return p, httpAddr(h.t, p)
}

func runHostileSuite(t *testing.T, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	g := "hostile-" + run
	h := &hostileRun{t: t, brokers: brokers, conn: []kgo.Opt{kgo.SeedBrokers(brokers...)}, group: g,
		events: g + ".events", clicks: g + ".clicks", framedTopic: g + ".framed",
		stats: g + ".stats", caps: g + ".caps", control: g + ".changes",
		passed: g + ".passed", rejected: g + ".rejected", dlq: g + ".dead-letter"}
	cl, err := kgo.NewClient(h.conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	h.adm = kadm.NewClient(cl)
	for topic, n := range map[string]int32{h.events: hostileParts, h.clicks: 2, h.framedTopic: 2} {
		if _, err := h.adm.CreateTopic(ctx, n, -1, nil, topic); err != nil {
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
	h.cfg = writeFile(t, g+".yaml", fmt.Sprintf(`brokers: [%s]
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
  - {name: open, target: 1e12, period: 1m}
  - {name: clicks, kind: rewards, target: 1e6, period: 1m}
caps:
  - {name: per-device, key: device, burst: 1000, rate: 1000000/1m}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, strings.Join(brokers, ", "), g, h.events, h.framedTopic, h.clicks, h.passed, h.rejected, hostileParts, h.framedTopic, reg.URL()))

	w1, a1 := h.worker("w1")
	w2, a2 := h.worker("w2")
	for _, a := range []string{a1, a2} {
		if !waitFor(90*time.Second, func() bool { c, _, _ := fetchURL(t, "http://"+a+"/readyz", ""); return c == 200 }) {
			t.Fatalf("worker at %s not ready", a)
		}
	}
	tr := startTraffic(t, h.conn, h.events, 5, 20*time.Millisecond) // 250 good events a second
	waitPast(ctx, t, h.adm, g, h.events)                            // the traffic goes on: the group passes the ends of now

	injectedAt := time.Now()
	h.injectStats(ctx)
	h.injectControl(ctx)
	h.injectEvents(ctx, tr)
	h.checkWorkerHTTP(a1)

	// New owners restore every partition: w1 stops (w2 takes its
	// partitions), w1b starts, w2 stops (w1b takes the rest), w2b starts.
	if err := w1.stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
		t.Fatalf("w1 after SIGTERM: %v", err)
	}
	w1b, b1 := h.worker("w1b")
	if err := w2.stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
		t.Fatalf("w2 after SIGTERM: %v", err)
	}
	w2b, b2 := h.worker("w2b")
	workers := map[string]*proc{b1: w1b, b2: w2b}

	parkedSrcs := []string{stats.SourceName(h.events, 0), stats.SourceName(h.events, 1), stats.SourceName(h.events, 2), stats.SourceName(h.events, 4)}
	// Both workers own partitions (the rebalances are over: the ten
	// partitions of the three input topics are shared), and the four
	// sources are parked: /readyz names them, the gauges count them.
	var readyz string
	var assigned, gauge float64
	if !waitFor(2*time.Minute, func() bool {
		readyz, assigned, gauge = "", 0, 0
		for a := range workers {
			_, _, body := fetchURL(t, "http://"+a+"/readyz", "")
			readyz += string(body)
			_, _, m := fetchURL(t, "http://"+a+"/metrics", "")
			if metric(m, "throttler_assigned_partitions") == 0 {
				return false
			}
			assigned += metric(m, "throttler_assigned_partitions")
			gauge += metric(m, "throttler_parked_partitions")
		}
		for _, src := range parkedSrcs {
			if !strings.Contains(readyz, src) {
				return false
			}
		}
		return assigned == hostileParts+4 && gauge == float64(len(parkedSrcs))
	}) {
		t.Fatalf("the four bad ledgers are not all parked (%v parked, %v partitions assigned); /readyz says:\n%s", gauge, assigned, readyz)
	}
	h.checkParked(ctx, workers, parkedSrcs)
	h.checkTools(ctx, parkedSrcs)

	// Repair: the workers start the parked partitions again.
	for _, src := range parkedSrcs {
		code, out, errOut := h.cliRun("ledger", "show", "--brokers", strings.Join(brokers, ","), "--stats-topic", h.stats, "--group", g, src)
		if code != 0 || !strings.Contains(out, "PARKS") {
			t.Fatalf("ledger show %s: %d\n%s\n%s", src, code, out, errOut)
		}
		code, out, errOut = h.cliRun("ledger", "repair", "--brokers", strings.Join(brokers, ","), "--stats-topic", h.stats, "--group", g, src)
		if code != 0 || !strings.Contains(out, "exact") || !strings.Contains(out, "written") {
			t.Fatalf("ledger repair %s: %d\n%s\n%s", src, code, out, errOut)
		}
	}
	for a := range workers {
		if !waitFor(90*time.Second, func() bool { c, _, _ := fetchURL(t, "http://"+a+"/readyz", ""); return c == 200 }) {
			_, _, body := fetchURL(t, "http://"+a+"/readyz", "")
			t.Fatalf("worker at %s not ready after the repairs: %s", a, body)
		}
	}
	h.row("repair: `throttler ledger repair` of the 4 parked sources -> exact, written; the workers started them again, /readyz 200")

	// The good traffic stops; everything is consumed.
	tr.end(t)
	for _, topic := range []string{h.events, h.clicks, h.framedTopic} {
		waitCommitted(ctx, t, h.adm, g, topic)
	}
	h.checkOutcome(ctx, workers, tr, injectedAt, lookups.Load())
	for _, p := range []*proc{w1b, w2b} {
		if err := p.stop(t, syscall.SIGTERM, 60*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.name, err)
		}
	}
	h.checkLogs()
	t.Logf("the table:\n%s", strings.Join(h.rows, "\n"))
}

// injectStats writes records no worker writes to the stats and caps
// topics: bad ledger records under four sources (parked once restored),
// a delta key with a huge number (not parked), definitions that break
// flow's rules, a worker status out of bounds, a corrupt caps record.
func (h *hostileRun) injectStats(ctx context.Context) {
	t := h.t
	key := func(p int32, part stats.LedgerPart, index uint32) []byte {
		k, err := stats.LedgerKey(stats.SourceName(h.events, p), part, index)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	enc := func(p int32, r stats.LedgerRecord) []byte {
		r.Source, r.At = stats.SourceName(h.events, p), time.Now()
		_, v, err := stats.EncodeLedger(r)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// A sequence of 2^64-1, which a writer continuing it wraps to 0.
	wrap := binary.AppendUvarint([]byte{1, 1}, math.MaxUint64)
	wrap = binary.AppendVarint(wrap, time.Now().Unix())
	wrap = binary.AppendUvarint(wrap, 0)
	wrap = binary.AppendVarint(wrap, 1)
	wrap = binary.AppendUvarint(wrap, 0)
	const far = 1 << 20 // delta numbers no owner reaches: the records stay
	recs := []*kgo.Record{
		{Topic: h.stats, Partition: 0, Key: key(0, stats.LedgerDelta, far), Value: []byte{2, 0}},
		{Topic: h.stats, Partition: 1, Key: key(1, stats.LedgerDelta, far), Value: enc(1, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 40, Offset: 1 << 40})},
		{Topic: h.stats, Partition: 2, Key: key(2, stats.LedgerDelta, far), Value: wrap},
		{Topic: h.stats, Partition: 3, Key: key(3, stats.LedgerDelta, 1<<31), Value: enc(3, stats.LedgerRecord{Part: stats.LedgerDelta, Index: 1 << 31, Seq: 1, Offset: 0})},
		{Topic: h.stats, Partition: 4, Key: key(4, stats.LedgerDelta, far), Value: enc(4, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 41, Offset: 5,
			Reports: []flow.Report{{Budget: "open", Total: flow.Counters{Offered: 1, Passed: 1, Rewards: math.Inf(1)}}}})},
	}
	var defs []*kgo.Record
	for _, b := range []flow.Budget{
		{Name: "huge", Target: 1.7e308, Period: time.Minute},
		{Name: "tiny", Target: 5e-324, Period: time.Minute},
		{Name: "far", Target: 10, Begin: time.Now(), End: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		k, v, err := stats.EncodeBudgetDef(stats.BudgetDef{Budget: b, At: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, &kgo.Record{Topic: h.stats, Partition: 5, Key: k, Value: v})
	}
	ws := stats.WorkerStatus{Worker: "forged", At: time.Now(), SyncInterval: time.Second}
	k, v, err := stats.EncodeWorkerStatus(ws)
	if err != nil {
		t.Fatal(err)
	}
	// Minor 1, then 1,000 parked sources claimed: more than a worker lists.
	v = append(binary.AppendUvarint(v[:len(v)-1], 1000), 1, 'x', 1, 'y')
	defs = append(defs, &kgo.Record{Topic: h.stats, Partition: 5, Key: k, Value: v})
	capRec := stats.CapRecord(h.caps, 5, stats.SourceName(h.events, 5), "per-device", []byte("d1"), time.Now(), false)
	capRec.Value = []byte{9, 9}
	produceRaw(ctx, t, h.conn, append(append(recs, defs...), capRec)...)
	h.row("stats: 0x02 0x00 under a ledger key of %s/0 -> parked (unknown_version) once restored", h.events)
	h.row("stats: a well-formed ledger record of %s/1 with input offset 2^40 -> parked (beyond_end) once restored", h.events)
	h.row("stats: a ledger record of %s/2 with sequence 2^64-1 -> parked (corrupt) once restored", h.events)
	h.row("stats: a well-formed delta numbered 2^31 under %s/3 -> not parked; the next snapshot tombstones that key only", h.events)
	h.row("stats: a delta of %s/4 with rewards +Inf -> parked (corrupt) once restored", h.events)
	h.row("stats: definitions with targets 1.7e308 and 5e-324 and an end in the year 20000, a worker status claiming 1,000 parked sources -> skipped by every reader (status, dashboard)")
	h.row("caps: an undecodable changelog record of %s/5 -> skipped at the caps load, one line; the partition runs", h.events)
}

// injectControl writes bad control records and tries a bad budget with
// the CLI.
func (h *hostileRun) injectControl(ctx context.Context) {
	t := h.t
	long := strings.Repeat("k", 900<<10)
	longName := strings.Repeat("n", 400<<10)
	recs := []*kgo.Record{
		{Topic: h.control, Key: []byte(long), Value: []byte(`{"version":1}`)},
		{Topic: h.control, Key: []byte(longName), Value: []byte(`{"version":1,"name":"` + longName + `","deleted":true}`)},
		{Topic: h.control, Key: []byte("huge"), Value: []byte(`{"version":1,"name":"huge","target":1.7e308,"period":"1m"}`)},
		{Topic: h.control, Key: []byte("tiny"), Value: []byte(`{"version":1,"name":"tiny","target":5e-324,"period":"1m"}`)},
	}
	for i := range flow.MaxDepth + 1 {
		v := fmt.Sprintf(`{"version":1,"name":"level-%02d","target":100,"period":"1m"`, i)
		if i > 0 {
			v += fmt.Sprintf(`,"parent":"level-%02d"`, i-1)
		}
		recs = append(recs, &kgo.Record{Topic: h.control, Key: fmt.Appendf(nil, "level-%02d", i), Value: []byte(v + "}")})
	}
	produceRaw(ctx, t, h.conn, recs...)
	code, _, errOut := h.cliRun("budget", "set", "--brokers", strings.Join(h.brokers, ","), "--group", h.group,
		"--name", "huge", "--target", "1.7e308", "--period", "1m")
	if code == 0 || !strings.Contains(errOut, "target") {
		t.Fatalf("budget set --target 1.7e308: exit %d\n%s", code, errOut)
	}
	h.row("control: a record with a 900 KiB key, a deletion of a 400 KiB name -> ignored or waiting, logged in clipped lines")
	h.row("control: targets 1.7e308 and 5e-324 -> invalid, counted, ignored; 'throttler budget set --target 1.7e308' -> exit %d, nothing written", code)
	h.row("control: budgets nested %d deep -> the deepest waits (nesting at most %d)", flow.MaxDepth+1, flow.MaxDepth)
}

// injectEvents sends reward and input records that are out of range,
// long or of unknown schemas.
func (h *hostileRun) injectEvents(ctx context.Context, tr *traffic) {
	t := h.t
	var rewards []*kgo.Record
	for i, v := range []string{"1.7e308", "1.7e308", "5000", "1", "2", "3"} {
		rewards = append(rewards, &kgo.Record{Topic: h.clicks, Partition: int32(i % 2), Key: []byte("r"),
			Value: []byte(`{"campaign":"clicks","value":` + v + `}`)})
	}
	var framedRecs []*kgo.Record
	for i := range 300 {
		framedRecs = append(framedRecs, &kgo.Record{Topic: h.framedTopic, Partition: int32(i % 2), Value: framed(uint32(1_000_000 + 7919*i))})
	}
	produceRaw(ctx, t, h.conn, append(rewards, framedRecs...)...)
	// Good events with a 200 KiB cap key and a 200 KiB id: delivered.
	var long []*kgo.Record
	for i := range 3 {
		long = append(long, &kgo.Record{Topic: h.events, Key: []byte("long"),
			Value: fmt.Appendf(nil, `{"id":"long%d-%s","campaign":"open","user":"long","device":"%s"}`, i, strings.Repeat("i", 200<<10), strings.Repeat("d", 200<<10))})
	}
	if err := tr.produce(long...); err != nil {
		t.Fatal(err)
	}
	h.row("rewards: two of 1.7e308 and one of 5000 (max_value 1000) -> dead letters, reason reward_out_of_range; the counter stays finite")
	h.row("input: 3 events with a 200 KiB cap key and a 200 KiB id -> delivered; kept as 72-byte digests")
	h.row("input: 300 framed records of distinct unknown schema ids -> dead letters (unknown_schema), registry lookups rate-limited")
}

// checkWorkerHTTP checks a worker's HTTP server: headers, the Host check,
// a slow client cut.
func (h *hostileRun) checkWorkerHTTP(addr string) {
	t := h.t
	code, hd, _ := fetchURL(t, "http://"+addr+"/metrics", "")
	if code != 200 || hd.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(hd.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("/metrics: %d %v", code, hd)
	}
	if code, _, _ := fetchURL(t, "http://"+addr+"/metrics", "rebound.example.net:9090"); code != http.StatusMisdirectedRequest {
		t.Fatalf("/metrics for Host rebound.example.net: %d, want 421", code)
	}
	if slowHeaders(t, addr, 20*time.Second) {
		h.row("http: a client that sends half its headers -> the worker closes the connection (read-header timeout 5 s)")
	} else {
		t.Errorf("a client sending half its headers kept its connection for 20 s")
	}
	h.row("http: Host rebound.example.net -> 421; every answer has nosniff, DENY, a CSP with frame-ancestors 'none'")
}

// checkParked checks, while four sources are parked, that the two others
// run, that the parked ones stay at their committed offsets, and that
// the workers say so (metrics, logs).
func (h *hostileRun) checkParked(ctx context.Context, workers map[string]*proc, parked []string) {
	t := h.t
	committed := func() map[int32]int64 {
		os, err := h.adm.FetchOffsets(ctx, h.group)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == h.events {
				out[o.Partition] = o.At
			}
		})
		return out
	}
	before := committed()
	ends, err := h.adm.ListEndOffsets(ctx, h.events)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(60*time.Second, func() bool {
		c := committed()
		return c[3] >= ends[h.events][3].Offset && c[5] >= ends[h.events][5].Offset
	}) {
		t.Fatalf("the partitions that run (3, 5) did not reach the ends they had (%v): %v", ends, committed())
	}
	after := committed()
	for _, p := range []int32{0, 1, 2, 4} {
		if after[p] != before[p] {
			t.Fatalf("parked partition %d moved from %d to %d", p, before[p], after[p])
		}
	}
	for _, p := range workers {
		if p.exited() {
			t.Fatalf("%s exited", p.name)
		}
	}
	logged := 0
	for _, p := range h.procs {
		p.err.mu.Lock()
		for _, l := range p.err.all {
			if strings.Contains(l, "partition parked") {
				logged++
			}
		}
		p.err.mu.Unlock()
	}
	if logged < len(parked) {
		t.Fatalf("%d 'partition parked' lines for %d parked sources", logged, len(parked))
	}
	capsSkipped := false
	for _, p := range h.procs {
		if _, ok := p.err.find("caps changelog records skipped"); ok {
			capsSkipped = true
		}
	}
	if !capsSkipped {
		t.Errorf("no worker logged the skipped caps record")
	}
	h.row("parked: %v held at their committed offsets (%v) while partitions 3 and 5 ran to their ends; /readyz 503 names them, throttler_parked_partitions sums to %d, %d log lines", parked, after, len(parked), logged)
}

// checkTools checks `throttler status --json` and the dashboard while
// the partitions are parked.
func (h *hostileRun) checkTools(ctx context.Context, parked []string) {
	t := h.t
	brokers := strings.Join(h.brokers, ",")
	code, out, errOut := h.cliRun("status", "--brokers", brokers, "--stats-topic", h.stats, "--json")
	var st clusterstatus.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d, not a status document:\n%.2000s\n%s", code, out, errOut)
	}
	for _, b := range st.Budgets {
		if b.Name == "huge" || b.Name == "tiny" || b.Name == "far" {
			t.Fatalf("status shows the bad definition %q", b.Name)
		}
	}
	got := map[string]bool{}
	for _, p := range st.Parked {
		got[p.Source] = true
	}
	for _, src := range parked {
		if !got[src] {
			t.Fatalf("status --json parked %v lacks %s", st.Parked, src)
		}
	}
	h.row("status --json: valid JSON, exit 0; the 4 parked sources listed with their reasons; no bad definition shown")

	dash := h.cli("dashboard", "--brokers", brokers, "--stats-topic", h.stats, "--listen", "127.0.0.1:0", "--sample", "500ms")
	line := dash.waitLine(t, "throttler dashboard: http://", 60*time.Second)
	url := regexp.MustCompile(`http://[0-9.:]+/`).FindString(line)
	for _, path := range []string{"api/v1/summary", "api/v1/budgets", "api/v1/budgets?sort=deviation", "api/v1/budgets/open", "api/v1/budgets/clicks",
		"api/v1/budgets/open/chart.svg", "api/v1/budgets/clicks/chart.svg", "api/v1/experiments", "api/v1/workers"} {
		t0 := time.Now()
		code, _, body := fetchURL(t, url+path, "")
		switch {
		case code != 200:
			t.Fatalf("dashboard %s: %d %.300s", path, code, body)
		case strings.HasSuffix(path, ".svg") && !strings.HasSuffix(string(body), "</svg>"):
			t.Fatalf("dashboard %s: not an SVG (%d bytes)", path, len(body))
		case !strings.HasSuffix(path, ".svg") && !json.Valid(body):
			t.Fatalf("dashboard %s: not JSON: %.300s", path, body)
		}
		t.Logf("dashboard %s: %d bytes in %v", path, len(body), time.Since(t0).Round(time.Millisecond))
	}
	_, _, body := fetchURL(t, url+"api/v1/workers", "")
	parkedShown := strings.Count(string(body), `"parked":"`)
	if parkedShown < len(parked) {
		t.Fatalf("dashboard workers: %d partitions with a parked reason, want %d: %.1000s", parkedShown, len(parked), body)
	}
	// More event streams than the dashboard keeps: the one past 64 is
	// refused.
	sctx, stop := context.WithCancel(ctx)
	refused := 0
	for range 65 {
		req, _ := http.NewRequestWithContext(sctx, "GET", url+"api/v1/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused++
			resp.Body.Close()
		}
	}
	stop()
	if refused != 1 {
		t.Fatalf("%d of 65 event streams refused, want 1", refused)
	}
	waitIdle(t, dash)
	h.row("dashboard: every endpoint 200, valid JSON (charts: SVG) within 2 s, the parked partitions named; the 65th event stream 503; back to idle")
	if err := dash.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("dashboard after SIGTERM: %v", err)
	}
}

// checkOutcome checks, once everything is consumed, where every record
// went and what the ledgers count.
func (h *hostileRun) checkOutcome(ctx context.Context, workers map[string]*proc, tr *traffic, injectedAt time.Time, lookups int64) {
	t := h.t
	for a, p := range workers {
		code, _, body := fetchURL(t, "http://"+a+"/metrics", "")
		if p.exited() || code != 200 || metric(body, "throttler_passed_total") == 0 {
			t.Errorf("%s: exited %v, /metrics %d, passed %v", p.name, p.exited(), code, metric(body, "throttler_passed_total"))
		}
	}
	outs := readTopics(ctx, t, h.brokers[0], h.passed, h.rejected, h.dlq)
	tl := account(tr.records(), outs, "id", "open")
	t.Logf("good traffic: %v", tl)
	if len(tl.lost) > 0 || tl.duplicates > 0 {
		t.Errorf("good events: %d lost (e.g. %.3v), %d duplicated", len(tl.lost), tl.lost, tl.duplicates)
	}
	reasons := map[string]int{}
	for _, r := range outs[h.dlq] {
		reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason)
		reasons[reason]++
	}
	if reasons["reward_out_of_range"] != 3 || reasons["unknown_schema"] != 300 {
		t.Errorf("dead letters by reason %v: want 3 reward_out_of_range and 300 unknown_schema", reasons)
	}
	if bound := 50 + 20*int64(time.Since(injectedAt).Seconds()+1); lookups > bound {
		t.Errorf("%d registry requests for 300 unknown ids, more than the bound %d", lookups, bound)
	}
	var passes uint64
	for src, st := range loadLedgers(ctx, t, h.conn, h.stats, h.events, hostileParts) {
		if len(st.Problems) > 0 {
			t.Errorf("%s: ledger problems after the repair: %v", src, st.Problems)
		}
		if r, ok := st.Report("open"); ok {
			passes += r.Total.Passed
		}
	}
	if passes != uint64(tl.passes) {
		t.Errorf("the ledgers count %d passes, the output topic holds %d", passes, tl.passes)
	}
	var rewards float64
	for _, st := range loadLedgers(ctx, t, h.conn, h.stats, h.clicks, 2) {
		if r, ok := st.Report("clicks"); ok {
			rewards += r.Total.Rewards
		}
	}
	if rewards != 6 {
		t.Errorf("the ledgers count %v rewards, want 6 (1+2+3; the three out of range dead-lettered)", rewards)
	}
	// The delta numbered 2^31 was tombstoned by the next snapshot.
	src3 := stats.SourceName(h.events, 3)
	in, err := stats.InspectLedger(ctx, h.conn, h.stats, src3, -1)
	if err != nil {
		t.Fatal(err)
	}
	stray := false
	for _, k := range in.Keys {
		if k.Part == stats.LedgerDelta && k.Index == 1<<31 {
			stray = k.Deleted
		}
	}
	if !stray || len(in.Restore.Problems) > 0 {
		t.Errorf("%s: the delta numbered 2^31 tombstoned %v, problems %v", src3, stray, in.Restore.Problems)
	}
	control := map[string]float64{}
	for a := range workers {
		_, _, body := fetchURL(t, "http://"+a+"/metrics", "")
		for _, r := range []string{"invalid", "waiting"} {
			control[r] += metric(body, `throttler_control_records_total{result="`+r+`"}`)
		}
	}
	if control["invalid"] < 3 || control["waiting"] < 1 {
		t.Errorf("control records counted %v: want at least 3 invalid (the long key, 1.7e308, 5e-324) and 1 waiting (the 17th level)", control)
	}
	h.row("outcome: %d good events, %d lost, %d duplicated; ledgers count %d passes, outputs hold %d; rewards counted %v; dead letters %v; %d registry requests; control records %v; the 2^31 delta tombstoned", tl.inputs, len(tl.lost), tl.duplicates, passes, tl.passes, rewards, reasons, lookups, control)
}

// checkLogs checks that no process logged a line over 64 KiB.
func (h *hostileRun) checkLogs() {
	longest, which, of := 0, "", ""
	for _, p := range h.procs {
		if n, s := maxLine(p); n > longest {
			longest, which, of = n, s, p.name
		}
	}
	if longest > 64<<10 {
		h.t.Errorf("%s logged a line of %d bytes: %s...", of, longest, which)
	}
	h.row("logs: the longest line of any process %d bytes (%s)", longest, of)
}
