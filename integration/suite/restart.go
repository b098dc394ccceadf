package suite

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

func RunBrokerRestart(t *testing.T, k BrokerKind) {
	const (
		rate       = 1000
		partitions = 12
	)
	target, window := 8000, 30*time.Second
	// THROTTLER_RESTART_KILL=1 makes the second stop a SIGKILL: the
	// broker then closes the transactions the crash left open before it
	// serves (internal/tools/broker/recover.go). THROTTLER_RESTART_KILLS=n runs
	// 2 minutes (4 times the target) with n SIGKILLs, evenly spaced, and
	// no SIGTERM.
	stops := []BrokerStop{{8 * time.Second, syscall.SIGTERM}, {20 * time.Second, syscall.SIGTERM}}
	if os.Getenv("THROTTLER_RESTART_KILL") == "1" {
		stops[1].Sig = syscall.SIGKILL
	}
	if s := os.Getenv("THROTTLER_RESTART_KILLS"); s != "" {
		target, window = 4*target, 2*time.Minute
		stops = EvenKills(window, EnvInt(t, "THROTTLER_RESTART_KILLS", 1))
	}
	// On Apache Kafka, a cluster of three nodes (every partition on all
	// three) restarted one node at a time, as production clusters are:
	// the partitions of a stopped node move to another leader. A single
	// node leaves them without one, and Kafka then skips commit markers
	// (docs/kafka-notes.md).
	brk := OwnCluster(t, k, partitions, nil, kafkabroker.Nodes(3))
	addr, input, group := brk.Addr, brk.Name("events"), brk.Name("rst")
	begin := time.Now().Add(10 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg := GroupConfig(t, k, addr, group, input, "exactly-once", partitions, target, begin, end)
	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", fmt.Sprint(partitions),
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", "5", "--flush-timeout", OutageFlush.String())
	WaitProducing(t, gen, addr, input)
	var workers []*Proc
	for i := range 3 {
		workers = append(workers, Start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg,
			"--transactional-id", fmt.Sprintf("%s-w%d", group, i)))
	}

	for _, stop := range stops {
		time.Sleep(time.Until(begin.Add(stop.At))) // real time: the stops' schedule
		if err := brk.Stop(t, stop.Sig); err != nil && stop.Sig == syscall.SIGTERM {
			t.Fatalf("broker after SIGTERM: %v", err)
		}
		t.Logf("t=%5.1fs broker stopped (%v); restarting in 2s", time.Since(begin).Seconds(), stop.Sig)
		time.Sleep(2 * time.Second) // real time: a 2 s outage the workers ride out
		brk.Restart(t)
		t.Logf("t=%5.1fs broker restarted", time.Since(begin).Seconds())
	}
	<-gen.Done
	if gen.Werr != nil {
		t.Errorf("loadgen: %v\n%s", gen.Werr, gen.Err)
	}

	// The bar: at most 0.5% over target (checked by
	// finishExactlyOnce). A restart costs the workers their stats for
	// seconds; the guards of flow/guard.go reserve what stale peers may
	// have passed, so the runs end under target (the window closes while
	// the backlog of the second stop is still read).
	FinishExactlyOnce(t, addr, group, input, target, partitions, workers...)
}

// OutageFlush is how long the load generator of a run whose broker stops
// waits at its end for its last records to be acknowledged: longer than
// a restart of Apache Kafka on a loaded 2-core machine (up to 20 s seen;
// the load generator's default, 10 s, ran out once when the last restart
// came as the load ended).
const OutageFlush = 2 * time.Minute

// BrokerStop is a stop of the broker, at a time after the window's begin.
type BrokerStop struct {
	At  time.Duration
	Sig syscall.Signal
}

// EvenKills returns n SIGKILLs spread evenly over window.
func EvenKills(window time.Duration, n int) []BrokerStop {
	var stops []BrokerStop
	for i := 1; i <= n; i++ {
		stops = append(stops, BrokerStop{window * time.Duration(i) / time.Duration(n+1), syscall.SIGKILL})
	}
	return stops
}
