package integration

import (
	"os"
	"strings"
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// TestHostileKfake runs the suite on `throttler broker` (kfake) as a
// process, which compacts nothing (docs/kafka-notes.md).
func TestHostileKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-minute run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker
	_, addr := StartBroker(t, HostileParts)
	RunHostileSuite(t, []string{addr})
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
	RunHostileSuite(t, strings.Split(brokers, ","))
}
