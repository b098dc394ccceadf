package suite

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

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
		logged += p.Err.Count("partition parked")
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
