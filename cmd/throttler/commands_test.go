package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

const testTimeout = 2 * time.Minute

// TestBrokerCommand runs `throttler broker` on port 0, reads the printed
// address, checks the seed topics and stops it as a signal would.
func TestBrokerCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	pr, pw := io.Pipe()
	var stderr strings.Builder // written only by the command goroutine
	codeCh := make(chan int, 1)
	go func() {
		defer pw.Close()
		codeCh <- dispatch(runCtx, []string{"broker", "--addr", "127.0.0.1:0", "--partitions", "2",
			"--seed-topics", "events,clicks", "--data-dir", t.TempDir(), "--log-level", "warn"}, pw, &stderr)
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no address printed: %v", lines.Err())
	}
	addr := lines.Text()
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("printed %q, want 127.0.0.1:<port>", addr)
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain anything else

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics["events"].Partitions) != 2 || len(topics["clicks"].Partitions) != 2 {
		t.Fatalf("seed topics: %v", topics.Names())
	}

	stop() // SIGINT
	select {
	case code := <-codeCh:
		if code != 0 {
			t.Fatalf("exit code %d, stderr %s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("broker command did not stop")
	}
}

// TestLoadgenCommand runs `throttler loadgen` against an in-process broker
// and checks the summary and the created topic.
func TestLoadgenCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	code, stdout, stderr := runCLI(t, ctx, "loadgen", "--brokers", b.Addr(), "--topic", "made",
		"--partitions", "3", "--rate", "0", "--count", "500", "--budgets", "a:3,b:1", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Produced uint64  `json:"produced"`
		Seconds  float64 `json:"seconds"`
		Rate     float64 `json:"rate"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Produced != 500 || sum.Seconds <= 0 {
		t.Fatalf("summary %q (%v)", stdout, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx, "made")
	if err != nil || len(topics["made"].Partitions) != 3 {
		t.Fatalf("topic made: %v, %v", topics, err)
	}
	ends, err := adm.ListEndOffsets(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 500 {
		t.Fatalf("topic holds %d records, want 500", total)
	}
}

// TestLoadgenAvro runs `throttler loadgen --format avro` with an
// in-process registry: the schema is registered as events-value and every
// record is framed with its id.
func TestLoadgenAvro(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	code, _, stderr := runCLI(t, ctx, "loadgen", "--brokers", b.Addr(), "--topic", "events", "--partitions", "1",
		"--rate", "0", "--count", "50", "--budgets", "a", "--format", "avro", "--registry", reg.URL())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ss, ok := reg.Registry().GetSchema("events-value", 1)
	if !ok || ss.Type != sr.TypeAvro {
		t.Fatalf("registered %+v, %v", ss, ok)
	}
	enc, err := loadgen.NewEncoder(loadgen.FormatAvro, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for n := 0; n < 50; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 50", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if e, err := enc.Decode(r.Value); err != nil || e.Campaign != "a" {
				t.Fatalf("record %x: %+v, %v", r.Value, e, err)
			}
		})
	}
}

// TestLoadgenUnreachableBroker checks that a broker nobody listens on is
// an error, not a hang (bounded by the command's context here).
func TestLoadgenUnreachableBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	code, _, stderr := runCLI(t, ctx, "loadgen", "--brokers", addr, "--budgets", "a", "--count", "1")
	if code != 1 || !strings.Contains(stderr, addr) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
