package pacing

import (
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// Three `throttler run` processes on a 12-partition topic with skewed
// (zipf) traffic pace one budget over a 60 s window; one worker is stopped
// with SIGTERM mid-window. Delivered passes must end within 1% of the
// target, follow the ideal curve within 3% of the target, and equal the
// passes counted in the ledgers and the stats topic. It runs on kfake and
// on Apache Kafka.
func TestPacedWindowThreeWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s run across processes")
	}
	OnBrokers(t, BothBrokers, RunPacedWindow)
}
