package kafkabroker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttler/throttler/internal/memdir"
)

// Start starts a broker for t (see New) in a directory of t's, in memory
// where there is room (memdir), and stops it when t ends; a failed test logs the end of the broker's log, and
// THROTTLER_TEST_LOGS=DIR keeps the whole log as DIR/TEST.kafka.log. It
// skips t when Java or the jars are missing (see Skip).
func Start(t testing.TB, opts ...Opt) *Broker {
	t.Helper()
	Skip(t)
	dir, err := memdir.MkdirTemp("throttler-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { memdir.RemoveAll(dir) })
	b, err := New(dir, opts...)
	if err != nil {
		t.Fatalf("starting Apache Kafka %s: %v", Version(), err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("stopping Apache Kafka: %v", err)
		}
		if t.Failed() {
			t.Logf("--- Apache Kafka's log (WARN and up, tail):\n%s", b.LogTail(30))
		}
		KeepLog(t, b)
	})
	return b
}

// Skip skips t, naming the command that fetches what is missing, when
// Java or the broker's jars are missing; with THROTTLER_REQUIRE_KAFKA=1
// (CI) it fails t instead.
func Skip(t testing.TB) {
	t.Helper()
	_, _, err := Lib()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrUnavailable) || os.Getenv("THROTTLER_REQUIRE_KAFKA") == "1" {
		t.Fatal(err)
	}
	t.Skipf("skipped: %v", err)
}

// KeepLog copies the cluster's logs to DIR/TEST.kafka.log (a node's
// beyond the first to DIR/TEST.kafka-N.log) when THROTTLER_TEST_LOGS=DIR
// is set.
func KeepLog(t testing.TB, b *Broker) {
	dir := os.Getenv("THROTTLER_TEST_LOGS")
	if dir == "" {
		return
	}
	for i, log := range b.serverLogs() {
		data, err := os.ReadFile(log)
		if err != nil {
			continue
		}
		suffix := ".kafka.log"
		if i > 0 {
			suffix = fmt.Sprintf(".kafka-%d.log", i+1)
		}
		name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+suffix)
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Logf("THROTTLER_TEST_LOGS: %v", err)
		}
	}
}
