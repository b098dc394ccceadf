package fencing

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/throttler/throttler/integration/suite"
)

// A worker replaced while it still runs (a new process with the same
// transactional id, as a rolling deploy starts a pod's successor before
// the old one is gone): the new one's InitProducerID fences the old
// producer, whose next transactional request fails; the old one is then
// stopped. Nothing is lost or written twice, and the counters equal the
// outputs. It runs on Apache Kafka (kfake, with THROTTLER_BROKERS, passes
// it too).
func TestWorkerReplacedIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s run across processes")
	}
	OnBrokers(t, KafkaOnly, func(t *testing.T, k BrokerKind) {
		r := StartFenceRun(t, k, 20*time.Second)
		old := r.Worker(t, "worker-0", r.Group+"-w0")
		other := r.Worker(t, "worker-1", r.Group+"-w1")
		time.Sleep(time.Until(r.Begin.Add(5 * time.Second))) // real time: the replacement's place in the window
		successor := r.Worker(t, "worker-0-successor", r.Group+"-w0")
		successor.WaitLine(t, `"message":"worker started"`, 60*time.Second)
		// The old worker commits every 100 ms: its next transaction
		// after the successor's start is refused.
		fenced := WaitFor(30*time.Second, func() bool {
			_, a := old.Err.Find("producer fenced")
			_, b := successor.Err.Find("producer fenced")
			return a || b || old.Exited()
		})
		line, _ := old.Err.Find("producer fenced")
		t.Logf("the old worker: %s", line)
		if !fenced {
			t.Errorf("no worker logged a fenced producer within 30 s of the successor's start")
		}
		if err := old.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Logf("the old worker after SIGTERM: %v", err)
		}
		r.Finish(t, other, successor)
	})
}

// A worker frozen (SIGSTOP) in the middle of a transaction for longer
// than its session and transaction timeouts: the group gives its
// partitions to the other worker, which reads them once the broker has
// aborted the frozen worker's transaction on its timeout; woken up
// (SIGCONT), the worker finds its producer fenced, starts a new session
// and goes on. Nothing is lost or written twice, and the counters equal
// the outputs. It runs on Apache Kafka, whose transaction coordinator
// looks for timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by
// default); kfake, with THROTTLER_BROKERS, passes it too.
func TestTransactionAbortedOnTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("a 50 s run across processes")
	}
	OnBrokers(t, KafkaOnly, func(t *testing.T, k BrokerKind) {
		r := StartFenceRun(t, k, 30*time.Second)
		frozen := r.Worker(t, "worker-0", r.Group+"-w0")
		other := r.Worker(t, "worker-1", r.Group+"-w1")
		time.Sleep(time.Until(r.Begin.Add(3 * time.Second))) // real time: the freeze's place in the window
		if err := frozen.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Logf("t=%4.1fs worker-0 frozen", time.Since(r.Begin).Seconds())
		time.Sleep(25 * time.Second) // real time: past the session (6 s) and transaction (8 s) timeouts and the broker's check
		if err := frozen.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("t=%4.1fs worker-0 woken", time.Since(r.Begin).Seconds())
		if r.Brk.Kafka != nil {
			t.Logf("Apache Kafka: %s", GrepFile(filepath.Join(r.Brk.Kafka.Dir(), "server.log"), r.Group+"-w0", "timed out", "timeout"))
		}
		if line, ok := other.Err.Find(`"owned":12`); ok {
			t.Logf("worker-1 took worker-0's partitions: %s", line)
		}
		r.Finish(t, frozen, other) // worker-0 runs on
	})
}
