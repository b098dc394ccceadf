package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// TestBudgetCommands runs two workers (`throttler run`) on an in-process
// broker, under 2000 events/s, and changes their budgets with `throttler
// budget set/delete/reset`, checking from each worker's logs that it
// applied every change without a restart, and logging how long after the
// command started it did.
func TestBudgetCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startEventsBroker(ctx, t)
	const syncInterval = time.Second
	cfg := writeConfig(t, fmt.Sprintf(`
brokers: [%q]
group: bt
topics: {input: [events], output: passed}
sync_interval: %v
fields: {budget: campaign}
budgets:
  - {name: a, target: 1000, period: 1h}
`, b.Addr(), syncInterval))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	logs := make([]*syncBuffer, 2)
	codes := make(chan int, len(logs))
	for i := range logs {
		logs[i] = &syncBuffer{}
		go func() {
			codes <- dispatch(runCtx, []string{"run", "--config", cfg, "--http", "127.0.0.1:0"}, &syncBuffer{}, logs[i])
		}()
	}
	for i, l := range logs {
		var addr string
		ready := func() bool {
			if addr = httpAddr(l.String()); addr == "" {
				return false
			}
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		if !poll(ctx, ready) {
			t.Fatalf("worker %d never ready:\n%s", i+1, l.String())
		}
	}

	// Traffic while the budgets change: 2000 events/s of budget a.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan error, 1)
	go func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		if err != nil {
			loadDone <- err
			return
		}
		defer cl.Close()
		g, err := loadgen.New(loadgen.Config{Seed: 5, Budgets: []loadgen.Budget{{Name: "a", Weight: 1}}})
		if err == nil {
			_, err = loadgen.Run(loadCtx, cl, g, loadgen.RunConfig{Topic: "events", Rate: 2000})
		}
		loadDone <- err
	}()

	// change runs a budget command and waits until every worker has logged
	// applying it (a "budgets changed" line holding want).
	change := func(what, want string, args ...string) {
		t.Helper()
		before := make([]int, len(logs))
		for i, l := range logs {
			before[i] = applied(l.String(), want)
		}
		start := time.Now()
		code, stdout, stderr := runCLI(t, ctx, append(args, "--brokers", b.Addr(), "--group", "bt")...)
		acked := time.Now()
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", what, code, stderr)
		}
		if !strings.Contains(stdout, "offset") {
			t.Fatalf("%s: stdout %q", what, stdout)
		}
		var seen []string
		for i, l := range logs {
			// A fine tick: the test logs how soon each worker applied it.
			if !testwait.Poll(time.Until(deadline(ctx)), time.Millisecond, func() bool { return applied(l.String(), want) != before[i] }) {
				t.Fatalf("%s: worker %d never applied it:\n%s", what, i+1, l.String())
			}
			seen = append(seen, fmt.Sprintf("worker %d by %v", i+1, time.Since(start).Round(time.Microsecond)))
		}
		t.Logf("%s: the command took %v; applied on %s after it started (sync interval %v)",
			what, acked.Sub(start).Round(time.Microsecond), strings.Join(seen, ", "), syncInterval)
	}
	change("target of a to 5000", `"changed":["a"]`, "budget", "set", "--name", "a", "--target", "5000", "--period", "1h")
	change("add b under a", `"added":["b"]`, "budget", "set", "--name", "b", "--target", "10",
		"--begin", "2026-11-22T10:00:00Z", "--end", "2026-11-22T11:00:00Z", "--parent", "a")
	code, stdout, stderr := runCLI(t, ctx, "budget", "list", "--brokers", b.Addr(), "--group", "bt")
	if code != 0 || !strings.Contains(stdout, `"name":"a","target":5000`) || !strings.Contains(stdout, `"name":"b","target":10`) {
		t.Fatalf("budget list: exit %d\n%s%s", code, stdout, stderr)
	}
	change("delete b", `"deleted":["b"]`, "budget", "delete", "--name", "b")
	change("reset a to the config file", `"changed":["a"]`, "budget", "reset", "--name", "a")

	stopLoad()
	if err := <-loadDone; err != nil && loadCtx.Err() == nil {
		t.Fatalf("loadgen: %v", err)
	}
	stop()
	for range logs {
		if code := <-codes; code != 0 {
			t.Fatalf("run exited %d", code)
		}
	}
}

// startEventsBroker starts an in-process broker on a free port with a
// four-partition "events" topic, closed when the test ends.
func startEventsBroker(ctx context.Context, t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Partitions(4), broker.SeedTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// applied counts a worker's "budgets changed" log lines holding want.
func applied(logs, want string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"message":"budgets changed"`) && strings.Contains(line, want) {
			n++
		}
	}
	return n
}

// TestBudgetSetBadFlags checks that a bad budget exits 2 naming its flag
// and writes nothing (no broker is needed to refuse it).
func TestBudgetSetBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--target", "5", "--period", "1h"}, "--name"},
		{[]string{"--name", "x", "--target", "-5", "--period", "1h"}, "--target"},
		{[]string{"--name", "x", "--target", "5"}, "--period"},
		{[]string{"--name", "x", "--target", "5", "--begin", "2026-11-22T11:00:00Z", "--end", "2026-11-22T10:00:00Z"}, "--end"},
		{[]string{"--name", "x", "--target", "5", "--begin", "tomorrow", "--end", "2026-11-22T10:00:00Z"}, "--begin"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--kind", "clicks"}, "--kind"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--reserve", "1m"}, "--reserve"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--parent", "x"}, "--parent"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--action", "wait"}, "--action"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--conversion", "0.1"}, "--conversion"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--kind", "rewards", "--reward-delay", "-1s"}, "--reward-delay"},
		{[]string{"--name", "x", "--target", "5", "--period", "1h", "--action", "delay", "--parent", "p"}, "--parent"},
	}
	for _, c := range cases {
		args := append([]string{"budget", "set", "--brokers", "127.0.0.1:1"}, c.args...)
		code, _, stderr := runCLI(t, context.Background(), args...)
		if code != 2 || !strings.Contains(stderr, c.flag) {
			t.Errorf("%v: exit %d, want 2 naming %s:\n%s", c.args, code, c.flag, stderr)
		}
	}
	if code, _, stderr := runCLI(t, context.Background(), "budget", "delete", "--brokers", "127.0.0.1:1"); code != 2 || !strings.Contains(stderr, "--name") {
		t.Errorf("delete without --name: exit %d:\n%s", code, stderr)
	}
}
