package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fenceRun is a run of exactly-once workers over paced load, for the
// tests of transactions the broker ends on its own.
type fenceRun struct {
	brk                *cluster
	addr, input, group string
	cfg                string
	begin, end         time.Time
	gen                *proc
	target, partitions int
}

// startFenceRun starts load of window seconds at 1,000 events/s on a
// broker of kind k and writes the workers' config (groupConfig).
func startFenceRun(t *testing.T, k brokerKind, window time.Duration) *fenceRun {
	t.Helper()
	r := &fenceRun{brk: sharedCluster(t, k, 12), target: 4000 * int(window/(10*time.Second)), partitions: 12}
	r.addr, r.input, r.group = r.brk.addr, r.brk.name("events"), r.brk.name("fence")
	r.begin = time.Now().Add(8 * time.Second).Truncate(time.Second)
	r.end = r.begin.Add(window)
	r.cfg = groupConfig(t, k, r.addr, r.group, r.input, "exactly-once", r.partitions, r.target, r.begin, r.end)
	r.gen = start(t, "loadgen", "loadgen", "--brokers", r.addr, "--topic", r.input, "--partitions", "12",
		"--rate", "1000", "--duration", time.Until(r.end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", "13")
	waitProducing(t, r.gen, r.addr, r.input)
	return r
}

// worker starts a worker with transactional id id.
func (r *fenceRun) worker(t *testing.T, name, id string) *proc {
	return start(t, name, "run", "--config", r.cfg, "--transactional-id", id)
}

// finish waits for the load's end and checks the run (finishExactlyOnce).
func (r *fenceRun) finish(t *testing.T, workers ...*proc) {
	t.Helper()
	loadDone(t, r.gen)
	finishExactlyOnce(t, r.addr, r.group, r.input, r.target, r.partitions, workers...)
}

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
	onBrokers(t, kafkaOnly, func(t *testing.T, k brokerKind) {
		r := startFenceRun(t, k, 20*time.Second)
		old := r.worker(t, "worker-0", r.group+"-w0")
		other := r.worker(t, "worker-1", r.group+"-w1")
		time.Sleep(time.Until(r.begin.Add(5 * time.Second))) // real time: the replacement's place in the window
		successor := r.worker(t, "worker-0-successor", r.group+"-w0")
		successor.waitLine(t, `"message":"worker started"`, 60*time.Second)
		// The old worker commits every 100 ms: its next transaction
		// after the successor's start is refused.
		fenced := waitFor(30*time.Second, func() bool {
			_, a := old.err.find("producer fenced")
			_, b := successor.err.find("producer fenced")
			return a || b || old.exited()
		})
		line, _ := old.err.find("producer fenced")
		t.Logf("the old worker: %s", line)
		if !fenced {
			t.Errorf("no worker logged a fenced producer within 30 s of the successor's start")
		}
		if err := old.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Logf("the old worker after SIGTERM: %v", err)
		}
		r.finish(t, other, successor)
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
	onBrokers(t, kafkaOnly, func(t *testing.T, k brokerKind) {
		r := startFenceRun(t, k, 30*time.Second)
		frozen := r.worker(t, "worker-0", r.group+"-w0")
		other := r.worker(t, "worker-1", r.group+"-w1")
		time.Sleep(time.Until(r.begin.Add(3 * time.Second))) // real time: the freeze's place in the window
		if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Logf("t=%4.1fs worker-0 frozen", time.Since(r.begin).Seconds())
		time.Sleep(25 * time.Second) // real time: past the session (6 s) and transaction (8 s) timeouts and the broker's check
		if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("t=%4.1fs worker-0 woken", time.Since(r.begin).Seconds())
		if r.brk.kafka != nil {
			t.Logf("Apache Kafka: %s", grepFile(filepath.Join(r.brk.kafka.Dir(), "server.log"), r.group+"-w0", "timed out", "timeout"))
		}
		if line, ok := other.err.find(`"owned":12`); ok {
			t.Logf("worker-1 took worker-0's partitions: %s", line)
		}
		r.finish(t, frozen, other) // worker-0 runs on
	})
}

// grepFile returns the first line of a file that holds want and one of
// alts, or "" (no such line, or no file).
func grepFile(path, want string, alts ...string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		for _, alt := range alts {
			if strings.Contains(l, want) && strings.Contains(l, alt) {
				return l
			}
		}
	}
	return ""
}
