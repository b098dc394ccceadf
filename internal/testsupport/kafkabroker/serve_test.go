package kafkabroker

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestServe runs a broker for the tools (throttler demo, bench, scale
// --brokers; docs/operations.md) when THROTTLER_KAFKA_SERVE is a
// duration: it prints the broker's address and serves until the
// duration passes or the test is interrupted, then stops it.
//
//	THROTTLER_KAFKA_SERVE=30m go test ./internal/testsupport/kafkabroker -run TestServe -v -timeout 0
func TestServe(t *testing.T) {
	s := os.Getenv("THROTTLER_KAFKA_SERVE")
	if s == "" {
		t.Skip("THROTTLER_KAFKA_SERVE=DURATION runs a broker for the tools")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("THROTTLER_KAFKA_SERVE=%q: %v", s, err)
	}
	b := Start(t)
	t.Logf("Apache Kafka %s at %s (data and log in %s) for %v", Version(), b.Addr(), b.Dir(), d)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	select {
	case <-stop:
	case <-time.After(d):
	}
}
