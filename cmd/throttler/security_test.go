package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/testsupport/testcert"
)

// startCLIBroker runs `throttler broker` with args on port 0 and returns
// its address; it stops with the test.
func startCLIBroker(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		done <- dispatch(runCtx, append([]string{"broker", "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...), pw, &stderr)
	}()
	t.Cleanup(func() { stop(); <-done })
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("broker printed no address: %v\n%s", lines.Err(), stderr.String())
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain
	return lines.Text()
}

// TestSecureBrokerCommands runs `throttler broker` with SASL
// (SCRAM-SHA-512) and TLS, then loadgen and run against it: with the right
// credentials loadgen produces and the worker processes every event; with
// a wrong password both exit 1 at once with an error naming the user and
// the mechanism (the worker's --connect-timeout is a minute: the message
// shows they did not wait for it).
func TestSecureBrokerCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	files, err := testcert.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startCLIBroker(t, ctx, "--partitions", "3", "--seed-topics", "events",
		"--sasl-user", "SCRAM-SHA-512:alice:s3cret", "--sasl-user", "PLAIN:bob:other",
		"--tls-cert", files.Cert, "--tls-key", files.Key)

	secFlags := func(pass string) []string {
		return []string{"--brokers", addr, "--tls-ca", files.CA, "--sasl-mechanism", "SCRAM-SHA-512",
			"--sasl-user", "alice", "--sasl-password", pass}
	}
	const n = 200
	lg := append([]string{"loadgen", "--topic", "events", "--budgets", "a", "--rate", "0", "--count", fmt.Sprint(n)}, secFlags("s3cret")...)
	if code, out, errOut := runCLI(t, ctx, lg...); code != 0 || !strings.Contains(out, fmt.Sprintf(`"produced":%d`, n)) {
		t.Fatalf("loadgen: exit %d, %s\n%s", code, out, errOut)
	}
	lg = append([]string{"loadgen", "--topic", "events", "--budgets", "a", "--count", "1"}, secFlags("wrong")...)
	code, _, errOut := runCLI(t, ctx, lg...)
	if code != 1 || !strings.Contains(errOut, `SASL authentication failed for user "alice" with mechanism SCRAM-SHA-512`) {
		t.Fatalf("loadgen, wrong password: exit %d, %s", code, errOut)
	}

	workerConfig := func(pass string) string {
		return writeConfig(t, fmt.Sprintf(`
brokers: [%q]
security:
  tls: {ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: alice, password: %q}
group: secure
topics: {input: [events], output: passed, rejected: rejected}
fields: {budget: campaign, id: id}
budgets: [{name: a, target: 1000000000, period: 1h}]
`, addr, files.CA, pass))
	}
	code, _, errOut = runCLI(t, ctx, "run", "--config", workerConfig("wrong"), "--http", "127.0.0.1:0", "--connect-timeout", "1m")
	if code != 1 || !strings.Contains(errOut, `SASL authentication failed for user \"alice\" with mechanism SCRAM-SHA-512`) {
		t.Fatalf("run, wrong password: exit %d, %s", code, errOut)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- dispatch(runCtx, []string{"run", "--config", workerConfig("s3cret"), "--http", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	var hp string
	if !poll(ctx, func() bool { hp = httpAddr(stderr.String()); return hp != "" }) {
		t.Fatalf("no http listening line:\n%s", stderr.String())
	}
	opts, err := kafkaconn.Opts([]string{addr}, config.Security{
		TLS:  config.TLS{CAFile: files.CA},
		SASL: config.SASL{Mechanism: "PLAIN", Username: "bob", Password: "other"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("passed", "rejected"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("read %d outputs, want %d:\n%s", got, n, stderr.String())
	}
	t.Logf("read %d outputs", got)
	resp, err := http.Get("http://" + hp + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	stop()
	if code := <-codeCh; code != 0 {
		t.Fatalf("run exit %d:\n%s", code, stderr.String())
	}
}
