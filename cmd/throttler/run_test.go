package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/buildinfo"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// syncBuffer is a strings.Builder safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// poll calls cond every 100ms until it is true or ctx ends.
func poll(ctx context.Context, cond func() bool) bool {
	return testwait.Poll(time.Until(deadline(ctx)), 100*time.Millisecond, cond)
}

// deadline returns ctx's deadline, or testwait.Patience from now.
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(testwait.Patience)
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// httpAddr returns the address of the "http listening" log line, or "".
func httpAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct {
			Message string `json:"message"`
			Addr    string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "http listening" {
			return line.Addr
		}
	}
	return ""
}

// TestRunCommand runs one worker against an in-process broker, waits for
// /readyz, produces events, reads them from the output topic and stops the
// worker as a signal would.
func TestRunCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Partitions(3), broker.SeedTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
brokers: [%q]
group: run-test
topics: {input: [events], output: passed, rejected: rejected}
sync_interval: 200ms
fields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - {name: a, target: 1000000000, period: 1h}
http: {listen: "127.0.0.1:1"}
`, b.Addr()))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- dispatch(runCtx, []string{"run", cfg, "--http", "127.0.0.1:0"}, &stdout, &stderr)
	}()

	var addr string
	if !poll(ctx, func() bool { addr = httpAddr(stderr.String()); return addr != "" }) {
		t.Fatalf("no http listening line:\n%s", stderr.String())
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" || port == "1" {
		t.Fatalf("logged address %q", addr)
	}
	ready := func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !poll(ctx, ready) {
		t.Fatalf("/readyz never 200:\n%s", stderr.String())
	}
	bi := buildinfo.Get()
	wantInfo := fmt.Sprintf("throttler_build_info{goversion=%q,revision=%q,version=%q} 1\n", bi.GoVersion, bi.ShortRevision(), bi.Version)
	if metrics := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(metrics, wantInfo) {
		t.Errorf("/metrics lacks %s", wantInfo)
	}

	// Paced at 50/s: the controller passes nothing before it has measured
	// the rate; then, with a huge target, everything.
	const n = 100
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("passed", "rejected"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g, err := loadgen.New(loadgen.Config{Seed: 3, Budgets: []loadgen.Budget{{Name: "a", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{Topic: "events", Count: n, Rate: 50}); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for got["passed"]+got["rejected"] < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic]++ })
	}
	if got["passed"] == 0 || got["passed"]+got["rejected"] != n {
		t.Fatalf("read %v, want %d events, some passed:\n%s", got, n, stderr.String())
	}

	stop() // SIGINT
	select {
	case code := <-codeCh:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("run did not stop")
	}
	for _, want := range []string{`"message":"signal received`, `"message":"worker stopped"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, stderr.String())
		}
	}
	if stdout.String() != "" {
		t.Errorf("unexpected stdout %q", stdout.String())
	}
}

// httpGet returns the body of url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestRunBadConfig checks that every problem is printed with its path and
// that nothing starts.
func TestRunBadConfig(t *testing.T) {
	cfg := writeConfig(t, "brokers: [nohost]\ntopics: {input: [in], output: in}\nfields: {budget: b}\nbudgets: [{name: a, target: -1, period: 1m}]\n")
	code, stdout, stderr := runCLI(t, context.Background(), "run", "--config", cfg, "--http", "127.0.0.1:0")
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"brokers[0]: ", "topics.output: ", "budgets[0].target: ", "nothing was started"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "http listening") {
		t.Errorf("started anyway:\n%s", stderr)
	}
	if code, _, stderr := runCLI(t, context.Background(), "run", "--config", cfg, "--http", "nope"); code != 2 || !strings.Contains(stderr, "flag --http") {
		t.Errorf("bad --http: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, context.Background(), "run", "--config", cfg, "--transactional-id", " w1"); code != 2 || !strings.Contains(stderr, "flag --transactional-id") {
		t.Errorf("bad --transactional-id: exit %d, %s", code, stderr)
	}
}

// TestRunUnreachableBroker checks that a wrong broker address is logged
// and ends the command, rather than hanging.
func TestRunUnreachableBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := writeConfig(t, fmt.Sprintf(`
brokers: [%q]
topics: {input: [events], output: passed}
fields: {budget: campaign}
budgets: [{name: a, target: 10, period: 1m}]
`, addr))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	code, _, stderr := runCLI(t, ctx, "run", "--config", cfg, "--http", "127.0.0.1:0", "--connect-timeout", "2s")
	if code != 1 || !strings.Contains(stderr, "cannot reach brokers") || !strings.Contains(stderr, addr) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}
