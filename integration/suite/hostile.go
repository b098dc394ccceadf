package suite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
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
  - {name: open, target: 1e12, period: 1m}
  - {name: clicks, kind: rewards, target: 1e6, period: 1m}
caps:
  - {name: per-device, key: device, burst: 1000, rate: 1000000/1m}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, strings.Join(brokers, ", "), g, h.Events, h.FramedTopic, h.Clicks, h.Passed, h.Rejected, HostileParts, h.FramedTopic, reg.URL()))

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

// InjectStats writes records no worker writes to the stats and caps
// topics: bad ledger records under four sources (parked once restored),
// a delta key with a huge number (not parked), definitions that break
// flow's rules, a worker status out of bounds, a corrupt caps record.
func (h *HostileRun) InjectStats(ctx context.Context) {
	t := h.T
	key := func(p int32, part stats.LedgerPart, index uint32) []byte {
		k, err := stats.LedgerKey(stats.SourceName(h.Events, p), part, index)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	enc := func(p int32, r stats.LedgerRecord) []byte {
		r.Source, r.At = stats.SourceName(h.Events, p), time.Now()
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
		{Topic: h.Stats, Partition: 0, Key: key(0, stats.LedgerDelta, far), Value: []byte{2, 0}},
		{Topic: h.Stats, Partition: 1, Key: key(1, stats.LedgerDelta, far), Value: enc(1, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 40, Offset: 1 << 40})},
		{Topic: h.Stats, Partition: 2, Key: key(2, stats.LedgerDelta, far), Value: wrap},
		{Topic: h.Stats, Partition: 3, Key: key(3, stats.LedgerDelta, 1<<31), Value: enc(3, stats.LedgerRecord{Part: stats.LedgerDelta, Index: 1 << 31, Seq: 1, Offset: 0})},
		{Topic: h.Stats, Partition: 4, Key: key(4, stats.LedgerDelta, far), Value: enc(4, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 41, Offset: 5,
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
		defs = append(defs, &kgo.Record{Topic: h.Stats, Partition: 5, Key: k, Value: v})
	}
	ws := stats.WorkerStatus{Worker: "forged", At: time.Now(), SyncInterval: time.Second}
	k, v, err := stats.EncodeWorkerStatus(ws)
	if err != nil {
		t.Fatal(err)
	}
	// Minor 1, then 1,000 parked sources claimed: more than a worker lists.
	v = append(binary.AppendUvarint(v[:len(v)-1], 1000), 1, 'x', 1, 'y')
	defs = append(defs, &kgo.Record{Topic: h.Stats, Partition: 5, Key: k, Value: v})
	capRec := stats.CapRecord(h.Caps, 5, stats.SourceName(h.Events, 5), "per-device", []byte("d1"), time.Now(), false)
	capRec.Value = []byte{9, 9}
	ProduceRaw(ctx, t, h.Conn, append(append(recs, defs...), capRec)...)
	h.Row("stats: 0x02 0x00 under a ledger key of %s/0 -> parked (unknown_version) once restored", h.Events)
	h.Row("stats: a well-formed ledger record of %s/1 with input offset 2^40 -> parked (beyond_end) once restored", h.Events)
	h.Row("stats: a ledger record of %s/2 with sequence 2^64-1 -> parked (corrupt) once restored", h.Events)
	h.Row("stats: a well-formed delta numbered 2^31 under %s/3 -> not parked; the next snapshot tombstones that key only", h.Events)
	h.Row("stats: a delta of %s/4 with rewards +Inf -> parked (corrupt) once restored", h.Events)
	h.Row("stats: definitions with targets 1.7e308 and 5e-324 and an end in the year 20000, a worker status claiming 1,000 parked sources -> skipped by every reader (status, dashboard)")
	h.Row("caps: an undecodable changelog record of %s/5 -> skipped at the caps load, one line; the partition runs", h.Events)
}

// InjectControl writes bad control records and tries a bad budget with
// the CLI.
func (h *HostileRun) InjectControl(ctx context.Context) {
	t := h.T
	long := strings.Repeat("k", 900<<10)
	longName := strings.Repeat("n", 400<<10)
	recs := []*kgo.Record{
		{Topic: h.Control, Key: []byte(long), Value: []byte(`{"version":1}`)},
		{Topic: h.Control, Key: []byte(longName), Value: []byte(`{"version":1,"name":"` + longName + `","deleted":true}`)},
		{Topic: h.Control, Key: []byte("huge"), Value: []byte(`{"version":1,"name":"huge","target":1.7e308,"period":"1m"}`)},
		{Topic: h.Control, Key: []byte("tiny"), Value: []byte(`{"version":1,"name":"tiny","target":5e-324,"period":"1m"}`)},
	}
	for i := range flow.MaxDepth + 1 {
		v := fmt.Sprintf(`{"version":1,"name":"level-%02d","target":100,"period":"1m"`, i)
		if i > 0 {
			v += fmt.Sprintf(`,"parent":"level-%02d"`, i-1)
		}
		recs = append(recs, &kgo.Record{Topic: h.Control, Key: fmt.Appendf(nil, "level-%02d", i), Value: []byte(v + "}")})
	}
	ProduceRaw(ctx, t, h.Conn, recs...)
	code, _, errOut := h.CliRun("budget", "set", "--brokers", strings.Join(h.Brokers, ","), "--group", h.Group,
		"--name", "huge", "--target", "1.7e308", "--period", "1m")
	if code == 0 || !strings.Contains(errOut, "target") {
		t.Fatalf("budget set --target 1.7e308: exit %d\n%s", code, errOut)
	}
	h.Row("control: a record with a 900 KiB key, a deletion of a 400 KiB name -> ignored or waiting, logged in clipped lines")
	h.Row("control: targets 1.7e308 and 5e-324 -> invalid, counted, ignored; 'throttler budget set --target 1.7e308' -> exit %d, nothing written", code)
	h.Row("control: budgets nested %d deep -> the deepest waits (nesting at most %d)", flow.MaxDepth+1, flow.MaxDepth)
}

// InjectEvents sends reward and input records that are out of range,
// long or of unknown schemas.
func (h *HostileRun) InjectEvents(ctx context.Context, tr *Traffic) {
	t := h.T
	var rewards []*kgo.Record
	for i, v := range []string{"1.7e308", "1.7e308", "5000", "1", "2", "3"} {
		rewards = append(rewards, &kgo.Record{Topic: h.Clicks, Partition: int32(i % 2), Key: []byte("r"),
			Value: []byte(`{"campaign":"clicks","value":` + v + `}`)})
	}
	var framedRecs []*kgo.Record
	for i := range 300 {
		framedRecs = append(framedRecs, &kgo.Record{Topic: h.FramedTopic, Partition: int32(i % 2), Value: Framed(uint32(1_000_000 + 7919*i))})
	}
	ProduceRaw(ctx, t, h.Conn, append(rewards, framedRecs...)...)
	// Good events with a 200 KiB cap key and a 200 KiB id: delivered.
	var long []*kgo.Record
	for i := range 3 {
		long = append(long, &kgo.Record{Topic: h.Events, Key: []byte("long"),
			Value: fmt.Appendf(nil, `{"id":"long%d-%s","campaign":"open","user":"long","device":"%s"}`, i, strings.Repeat("i", 200<<10), strings.Repeat("d", 200<<10))})
	}
	if err := tr.Produce(long...); err != nil {
		t.Fatal(err)
	}
	h.Row("rewards: two of 1.7e308 and one of 5000 (max_value 1000) -> dead letters, reason reward_out_of_range; the counter stays finite")
	h.Row("input: 3 events with a 200 KiB cap key and a 200 KiB id -> delivered; kept as 72-byte digests")
	h.Row("input: 300 framed records of distinct unknown schema ids -> dead letters (unknown_schema), registry lookups rate-limited")
}

// CheckWorkerHTTP checks a worker's HTTP server: headers, the Host check,
// a slow client cut.
func (h *HostileRun) CheckWorkerHTTP(addr string) {
	t := h.T
	code, hd, _ := FetchURL(t, "http://"+addr+"/metrics", "")
	if code != 200 || hd.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(hd.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("/metrics: %d %v", code, hd)
	}
	if code, _, _ := FetchURL(t, "http://"+addr+"/metrics", "rebound.example.net:9090"); code != http.StatusMisdirectedRequest {
		t.Fatalf("/metrics for Host rebound.example.net: %d, want 421", code)
	}
	if SlowHeaders(t, addr, 20*time.Second) {
		h.Row("http: a client that sends half its headers -> the worker closes the connection (read-header timeout 5 s)")
	} else {
		t.Errorf("a client sending half its headers kept its connection for 20 s")
	}
	h.Row("http: Host rebound.example.net -> 421; every answer has nosniff, DENY, a CSP with frame-ancestors 'none'")
}

// CheckParked checks, while four sources are parked, that the two others
// run, that the parked ones stay at their committed offsets, and that
// the workers say so (metrics, logs).
func (h *HostileRun) CheckParked(ctx context.Context, workers map[string]*Proc, parked []string) {
	t := h.T
	committed := func() map[int32]int64 {
		os, err := h.Adm.FetchOffsets(ctx, h.Group)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == h.Events {
				out[o.Partition] = o.At
			}
		})
		return out
	}
	before := committed()
	ends, err := h.Adm.ListEndOffsets(ctx, h.Events)
	if err != nil {
		t.Fatal(err)
	}
	if !WaitFor(60*time.Second, func() bool {
		c := committed()
		return c[3] >= ends[h.Events][3].Offset && c[5] >= ends[h.Events][5].Offset
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
		if p.Exited() {
			t.Fatalf("%s exited", p.Name)
		}
	}
	logged := 0
	for _, p := range h.Procs {
		p.Err.Mu.Lock()
		for _, l := range p.Err.All {
			if strings.Contains(l, "partition parked") {
				logged++
			}
		}
		p.Err.Mu.Unlock()
	}
	if logged < len(parked) {
		t.Fatalf("%d 'partition parked' lines for %d parked sources", logged, len(parked))
	}
	capsSkipped := false
	for _, p := range h.Procs {
		if _, ok := p.Err.Find("caps changelog records skipped"); ok {
			capsSkipped = true
		}
	}
	if !capsSkipped {
		t.Errorf("no worker logged the skipped caps record")
	}
	h.Row("parked: %v held at their committed offsets (%v) while partitions 3 and 5 ran to their ends; /readyz 503 names them, throttler_parked_partitions sums to %d, %d log lines", parked, after, len(parked), logged)
}

// CheckTools checks `throttler status --json` and the dashboard while
// the partitions are parked.
func (h *HostileRun) CheckTools(ctx context.Context, parked []string) {
	t := h.T
	brokers := strings.Join(h.Brokers, ",")
	code, out, errOut := h.CliRun("status", "--brokers", brokers, "--stats-topic", h.Stats, "--json")
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
	h.Row("status --json: valid JSON, exit 0; the 4 parked sources listed with their reasons; no bad definition shown")

	dash := h.Cli("dashboard", "--brokers", brokers, "--stats-topic", h.Stats, "--listen", "127.0.0.1:0", "--sample", "500ms")
	line := dash.WaitLine(t, "throttler dashboard: http://", 60*time.Second)
	url := regexp.MustCompile(`http://[0-9.:]+/`).FindString(line)
	for _, path := range []string{"api/v1/summary", "api/v1/budgets", "api/v1/budgets?sort=deviation", "api/v1/budgets/open", "api/v1/budgets/clicks",
		"api/v1/budgets/open/chart.svg", "api/v1/budgets/clicks/chart.svg", "api/v1/experiments", "api/v1/workers"} {
		t0 := time.Now()
		code, _, body := FetchURL(t, url+path, "")
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
	_, _, body := FetchURL(t, url+"api/v1/workers", "")
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
	WaitIdle(t, dash)
	h.Row("dashboard: every endpoint 200, valid JSON (charts: SVG) within 2 s, the parked partitions named; the 65th event stream 503; back to idle")
	if err := dash.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("dashboard after SIGTERM: %v", err)
	}
}

// CheckOutcome checks, once everything is consumed, where every record
// went and what the ledgers count.
func (h *HostileRun) CheckOutcome(ctx context.Context, workers map[string]*Proc, tr *Traffic, injectedAt time.Time, lookups int64) {
	t := h.T
	for a, p := range workers {
		code, _, body := FetchURL(t, "http://"+a+"/metrics", "")
		if p.Exited() || code != 200 || Metric(body, "throttler_passed_total") == 0 {
			t.Errorf("%s: exited %v, /metrics %d, passed %v", p.Name, p.Exited(), code, Metric(body, "throttler_passed_total"))
		}
	}
	outs := ReadTopics(ctx, t, h.Brokers[0], h.Passed, h.Rejected, h.Dlq)
	tl := Account(tr.Records(), outs, "id", "open")
	t.Logf("good traffic: %v", tl)
	if len(tl.Lost) > 0 || tl.Duplicates > 0 {
		t.Errorf("good events: %d lost (e.g. %.3v), %d duplicated", len(tl.Lost), tl.Lost, tl.Duplicates)
	}
	reasons := map[string]int{}
	for _, r := range outs[h.Dlq] {
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
	for src, st := range LoadLedgers(ctx, t, h.Conn, h.Stats, h.Events, HostileParts) {
		if len(st.Problems) > 0 {
			t.Errorf("%s: ledger problems after the repair: %v", src, st.Problems)
		}
		if r, ok := st.Report("open"); ok {
			passes += r.Total.Passed
		}
	}
	if passes != uint64(tl.Passes) {
		t.Errorf("the ledgers count %d passes, the output topic holds %d", passes, tl.Passes)
	}
	var rewards float64
	for _, st := range LoadLedgers(ctx, t, h.Conn, h.Stats, h.Clicks, 2) {
		if r, ok := st.Report("clicks"); ok {
			rewards += r.Total.Rewards
		}
	}
	if rewards != 6 {
		t.Errorf("the ledgers count %v rewards, want 6 (1+2+3; the three out of range dead-lettered)", rewards)
	}
	// The delta numbered 2^31 was tombstoned by the next snapshot.
	src3 := stats.SourceName(h.Events, 3)
	in, err := stats.InspectLedger(ctx, h.Conn, h.Stats, src3, -1)
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
		_, _, body := FetchURL(t, "http://"+a+"/metrics", "")
		for _, r := range []string{"invalid", "waiting"} {
			control[r] += Metric(body, `throttler_control_records_total{result="`+r+`"}`)
		}
	}
	if control["invalid"] < 3 || control["waiting"] < 1 {
		t.Errorf("control records counted %v: want at least 3 invalid (the long key, 1.7e308, 5e-324) and 1 waiting (the 17th level)", control)
	}
	h.Row("outcome: %d good events, %d lost, %d duplicated; ledgers count %d passes, outputs hold %d; rewards counted %v; dead letters %v; %d registry requests; control records %v; the 2^31 delta tombstoned", tl.Inputs, len(tl.Lost), tl.Duplicates, passes, tl.Passes, rewards, reasons, lookups, control)
}

// CheckLogs checks that no process logged a line over 64 KiB.
func (h *HostileRun) CheckLogs() {
	longest, which, of := 0, "", ""
	for _, p := range h.Procs {
		if n, s := MaxLine(p); n > longest {
			longest, which, of = n, s, p.Name
		}
	}
	if longest > 64<<10 {
		h.T.Errorf("%s logged a line of %d bytes: %s...", of, longest, which)
	}
	h.Row("logs: the longest line of any process %d bytes (%s)", longest, of)
}
