package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testTimeout bounds each test generously: the machine may be loaded.
const testTimeout = 2 * time.Minute

func start(t *testing.T, opts ...Opt) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	b, err := Start(ctx, append([]Opt{Addr("127.0.0.1:0")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func client(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestStartOnPortZeroWithSeedTopics(t *testing.T) {
	b := start(t, Partitions(3), SeedTopics("events", "clicks"))
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q, want 127.0.0.1 and a real port", b.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	topics, err := kadm.NewClient(client(t, b)).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"events", "clicks"} {
		td, ok := topics[name]
		if !ok || len(td.Partitions) != 3 {
			t.Errorf("topic %s: present %v, %d partitions, want 3", name, ok, len(td.Partitions))
		}
	}
}

func TestCloseAndContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b, err := Start(ctx, Addr("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-b.Done():
	case <-time.After(testTimeout):
		t.Fatal("broker did not stop when its context ended")
	}
	if err := b.Close(); err != nil { // again, after the context
		t.Fatal(err)
	}
	// The port is free again.
	ln, err := net.Listen("tcp", b.Addr())
	if err != nil {
		t.Fatalf("port still taken after Close: %v", err)
	}
	ln.Close()
}

func TestDataDirPersists(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	b1, err := Start(ctx, Addr("127.0.0.1:0"), DataDir(dir), Partitions(2), SeedTopics("kept"))
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, b1)
	for i := range 10 {
		r := &kgo.Record{Topic: "kept", Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b1.Close()

	// A new broker on the same dir (another port) has the records.
	b2 := start(t, DataDir(dir), SeedTopics("kept", "new"))
	cons := client(t, b2, kgo.ConsumeTopics("kept"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 10 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 10 records before the deadline", got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if got != 10 {
		t.Fatalf("consumed %d records, want 10", got)
	}
	topics, err := kadm.NewClient(client(t, b2)).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics["kept"].Partitions) != 2 || len(topics["new"].Partitions) != 12 {
		t.Fatalf("partitions: kept %d (want 2), new %d (want the default 12)",
			len(topics["kept"].Partitions), len(topics["new"].Partitions))
	}
}

func TestAdvertise(t *testing.T) {
	b := start(t, Advertise("localhost"))
	if !strings.HasPrefix(b.Addr(), "localhost:") {
		t.Fatalf("Addr() = %q, want localhost:<port>", b.Addr())
	}
	b2 := start(t, Addr("0.0.0.0:0"))
	if !strings.HasPrefix(b2.Addr(), "127.0.0.1:") {
		t.Fatalf("wildcard Addr() = %q, want 127.0.0.1:<port>", b2.Addr())
	}
}

func TestOptionErrors(t *testing.T) {
	ctx := context.Background()
	for _, opts := range [][]Opt{
		{Addr("nonsense")},
		{Addr("127.0.0.1:0"), Partitions(0)},
		{Addr("127.0.0.1:0"), CompactionInterval(-time.Second)},
		{Addr("127.0.0.1:0"), Advertise("host:99999")},
		{Addr("127.0.0.1:0"), Advertise(":9092")},
	} {
		b, err := Start(ctx, opts...)
		if !errors.Is(err, ErrOptions) {
			if b != nil {
				b.Close()
			}
			t.Errorf("Start with %d options: %v, want ErrOptions", len(opts), err)
		}
	}
	// A taken port is an error naming the address.
	b := start(t)
	if _, err := Start(ctx, Addr(b.Addr())); err == nil || !strings.Contains(err.Error(), b.Addr()) {
		t.Errorf("second broker on %s: %v", b.Addr(), err)
	}
}

// TestDataDirPrivate: the data dir is readable by its user only, whether
// the broker makes it or it existed with a wider mode.
func TestDataDirPrivate(t *testing.T) {
	for _, dir := range []string{filepath.Join(t.TempDir(), "new"), t.TempDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b := start(t, DataDir(dir))
		b.Close()
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("data dir %s: mode %v (%v), want 0700", dir, st.Mode().Perm(), err)
		}
	}
}

// kfake's warnings reach the log as warnings, but for its timing of a
// slow EndTxn, a debug line: a loaded machine trips its 5 ms threshold.
func TestKfakeLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := kfakeLogger{zerolog.New(&buf).Level(zerolog.InfoLevel)}
	l.Logf(kfake.LogLevelWarn, "txn: EndTxn slow pid=%d epoch=%d elapsed=%dms batches=%d groups=%d", 1, 2, 6, 3, 1)
	if buf.Len() != 0 {
		t.Fatalf("a slow EndTxn logged at info level: %s", buf.String())
	}
	l.Logf(kfake.LogLevelWarn, "something else %d", 1)
	if !strings.Contains(buf.String(), `"level":"warn"`) || !strings.Contains(buf.String(), "something else 1") {
		t.Fatalf("a kfake warning logged as %q", buf.String())
	}
}
