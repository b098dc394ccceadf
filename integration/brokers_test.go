package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

// The suite runs each test on one or more kinds of broker, as subtests
// named after them: the same test code, the broker a parameter.
//
//   - kfake: `throttler broker`, the embedded broker (a process);
//   - kafka: Apache Kafka 4 (internal/testsupport/kafkabroker), a fresh
//     cluster's transactions v2, classic consumer groups;
//   - kafka-kip848: the same with KIP-848 groups (group_protocol consumer);
//   - kafka-txn1: Apache Kafka formatted with transaction.version=1, as a
//     cluster upgraded from Kafka 3 runs, classic groups;
//   - container: Kafka in a container (testcontainers-go), where a Docker
//     engine answers (container_test.go), classic groups; like external,
//     the tests that stop their broker skip it;
//   - external: the cluster whose seed broker is THROTTLER_EXTERNAL_BROKERS
//     (host:port, plaintext), classic groups; the tests that stop their broker skip
//     it, the others name their topics and groups with a prefix of the
//     run's own and delete their topics at the end.
//
// Each test names the kinds it runs on by default; THROTTLER_BROKERS
// (kind names, comma-separated) runs every test on those instead.

// brokerKind is a kind of broker and the workers' group protocol on it.
type brokerKind struct {
	name      string
	kafka     bool   // Apache Kafka started by the test; else kfake
	external  bool   // the cluster at THROTTLER_EXTERNAL_BROKERS
	container bool   // Kafka in a container (testcontainers-go)
	txn       int    // Kafka's transaction.version
	protocol  string // the workers' group_protocol
}

var (
	kfakeKind  = brokerKind{name: "kfake", protocol: "classic"}
	kafkaKind  = brokerKind{name: "kafka", kafka: true, txn: 2, protocol: "classic"}
	kip848Kind = brokerKind{name: "kafka-kip848", kafka: true, txn: 2, protocol: "consumer"}
	txn1Kind   = brokerKind{name: "kafka-txn1", kafka: true, txn: 1, protocol: "classic"}
	// externalKind is the cluster at THROTTLER_EXTERNAL_BROKERS, only
	// on request.
	externalKind = brokerKind{name: "external", external: true, protocol: "classic"}
	// containerKind is Kafka in a container, where Docker answers.
	containerKind = brokerKind{name: "container", container: true, protocol: "classic"}

	// everyKind is every kind, the crash test's default.
	everyKind = []brokerKind{kfakeKind, kafkaKind, kip848Kind, txn1Kind}
	// bothBrokers is kfake and Kafka, the default of most tests.
	bothBrokers = []brokerKind{kfakeKind, kafkaKind}
	// kafkaOnly is the default of the tests of what a real broker does.
	kafkaOnly = []brokerKind{kafkaKind}
)

// kindsOf returns the kinds a test runs on: THROTTLER_BROKERS, or def.
func kindsOf(t *testing.T, def []brokerKind) []brokerKind {
	s := os.Getenv("THROTTLER_BROKERS")
	if s == "" {
		return def
	}
	var kinds []brokerKind
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, k := range append(everyKind, externalKind, containerKind) {
			if k.name == strings.TrimSpace(name) {
				kinds, found = append(kinds, k), true
			}
		}
		if !found {
			t.Fatalf("THROTTLER_BROKERS=%q: no kind %q (kinds: kfake, kafka, kafka-kip848, kafka-txn1, container, external)", s, name)
		}
	}
	return kinds
}

// onBrokers runs body once per kind of broker (see kindsOf), each as a
// subtest named after its kind. The Kafka kinds skip where Java or the
// jars are missing.
func onBrokers(t *testing.T, def []brokerKind, body func(t *testing.T, k brokerKind)) {
	t.Helper()
	for _, k := range kindsOf(t, def) {
		t.Run(k.name, func(t *testing.T) {
			if k.kafka {
				kafkabroker.Skip(t)
			}
			body(t, k)
		})
	}
}

// groupTimeouts are the workers' group and transaction timeouts; zero
// leaves one at its default.
type groupTimeouts struct {
	session, heartbeat, rebalance, transaction time.Duration
}

// fastTimeouts notice a lost worker within seconds.
var fastTimeouts = groupTimeouts{session: 6 * time.Second, heartbeat: 500 * time.Millisecond, rebalance: 5 * time.Second, transaction: 8 * time.Second}

// groupYAML returns the workers' group_protocol and timeouts lines. With
// KIP-848 the broker decides the session timeout and the heartbeat
// interval (kafkabroker's defaults: 6 s and 500 ms), so they are left out.
func (k brokerKind) groupYAML(to groupTimeouts) string {
	if k.protocol == "consumer" {
		to.session, to.heartbeat = 0, 0
	}
	var parts []string
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"session", to.session}, {"heartbeat", to.heartbeat}, {"rebalance", to.rebalance}, {"transaction", to.transaction}} {
		if f.d > 0 {
			parts = append(parts, fmt.Sprintf("%s: %v", f.name, f.d))
		}
	}
	s := "group_protocol: " + k.protocol + "\n"
	if len(parts) > 0 {
		s += "timeouts: {" + strings.Join(parts, ", ") + "}\n"
	}
	return s
}

// cluster is a running broker of a test.
type cluster struct {
	kind   brokerKind
	addr   string
	prefix string // of the topics and groups of the test

	// kfake: the `throttler broker` process, its data dir and flags.
	brk        *proc
	dir        string
	partitions int
	flags      []string

	kafka *kafkabroker.Broker
}

// ownCluster starts a broker of kind k for t alone, which t may stop and
// kill: `throttler broker` (partitions, more flags) or Apache Kafka
// (more options).
func ownCluster(t *testing.T, k brokerKind, partitions int, flags []string, opts ...kafkabroker.Opt) *cluster {
	t.Helper()
	if k.external || k.container {
		t.Skip("skipped on an external or container cluster: the test stops or configures its broker")
	}
	c := &cluster{kind: k, partitions: partitions, flags: flags}
	if k.kafka {
		c.kafka = kafkabroker.Start(t, append([]kafkabroker.Opt{kafkabroker.TransactionVersion(k.txn)}, opts...)...)
		c.addr = c.kafka.Addr()
		return c
	}
	c.dir = t.TempDir()
	c.brk, c.addr = startBrokerAt(t, "127.0.0.1:0", c.dir, partitions, flags...)
	return c
}

// sharedCluster gives t a broker of kind k that t must not stop: for
// kfake a `throttler broker` of its own, for Kafka the package's broker of
// the kind's transaction version, with topics and groups named with a
// prefix of t's own (c.name), deleted when t ends.
func sharedCluster(t *testing.T, k brokerKind, partitions int, flags ...string) *cluster {
	t.Helper()
	if k.external || k.container {
		addrs := os.Getenv("THROTTLER_EXTERNAL_BROKERS")
		if k.container {
			addrs = sharedContainer.get(t)
		}
		if addrs == "" {
			t.Fatal("the external kind needs THROTTLER_EXTERNAL_BROKERS=host:port (a seed broker)")
		}
		c := &cluster{kind: k, addr: addrs, prefix: fmt.Sprintf("it-%s-t%d-", runID, nextPrefix.Add(1))}
		t.Cleanup(func() { c.deleteTopics(t) })
		return c
	}
	if !k.kafka {
		return ownCluster(t, k, partitions, flags)
	}
	b := sharedKafka.get(t, k.txn)
	c := &cluster{kind: k, addr: b.Addr(), kafka: b, prefix: fmt.Sprintf("t%d-", nextPrefix.Add(1))}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- the shared Apache Kafka's log (WARN and up, tail; other tests' lines too):\n%s", b.LogTail(30))
			kafkabroker.KeepLog(t, b)
		}
		c.deleteTopics(t)
	})
	return c
}

// name returns the name of the test's topic or group s on the cluster.
func (c *cluster) name(s string) string { return c.prefix + s }

// stop stops the broker with sig (SIGTERM: gracefully; SIGKILL) and
// waits until it is gone; the error says why a graceful stop failed.
func (c *cluster) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if c.kafka != nil {
		if sig == syscall.SIGKILL {
			c.kafka.Kill()
			return nil
		}
		return c.kafka.Stop()
	}
	err := c.brk.stop(t, sig, 30*time.Second)
	if sig == syscall.SIGKILL && c.brk.exited() {
		return nil // "signal: killed" is what was asked for
	}
	return err
}

// restart starts the stopped broker again on its address and data.
func (c *cluster) restart(t *testing.T) {
	t.Helper()
	if c.kafka != nil {
		if err := c.kafka.Restart(); err != nil {
			t.Fatalf("restarting Apache Kafka: %v", err)
		}
		return
	}
	var again string
	c.brk, again = startBrokerAt(t, c.addr, c.dir, c.partitions, c.flags...)
	if again != c.addr {
		t.Fatalf("restarted broker on %s, want %s", again, c.addr)
	}
}

// deleteTopics deletes the topics of the test's prefix.
func (c *cluster) deleteTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	if err != nil {
		t.Errorf("deleting the test's topics: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Errorf("deleting the test's topics: %v", err)
		return
	}
	var mine []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, c.prefix) {
			mine = append(mine, name)
		}
	}
	if len(mine) == 0 {
		return
	}
	if _, err := adm.DeleteTopics(ctx, mine...); err != nil {
		t.Errorf("deleting the test's topics: %v", err)
	}
}

// nextPrefix numbers the tests on shared brokers.
var nextPrefix atomic.Int64

// runID tells this run's topics from other runs' on an external cluster.
var runID = strconv.FormatInt(time.Now().UnixNano()%(1<<40), 36)

// sharedKafka holds the package's Apache Kafka brokers, one per
// transaction version, started on first use and stopped by TestMain.
var sharedKafka = &kafkaPool{brokers: map[int]*kafkabroker.Broker{}}

type kafkaPool struct {
	mu      sync.Mutex
	dir     string
	brokers map[int]*kafkabroker.Broker
	err     error
}

// get returns the broker of transaction version txn, starting it.
func (p *kafkaPool) get(t *testing.T, txn int) *kafkabroker.Broker {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.brokers[txn]; b != nil {
		return b
	}
	if p.err != nil {
		t.Fatalf("the shared Apache Kafka did not start: %v", p.err)
	}
	if p.dir == "" {
		if p.dir, p.err = os.MkdirTemp("", "throttler-it-kafka-"); p.err != nil {
			t.Fatal(p.err)
		}
	}
	dir, err := os.MkdirTemp(p.dir, fmt.Sprintf("txn%d-", txn))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b, err := kafkabroker.New(dir, kafkabroker.TransactionVersion(txn))
	if err != nil {
		p.err = err
		t.Fatalf("starting the shared Apache Kafka %s: %v", kafkabroker.Version(), err)
	}
	t.Logf("the shared Apache Kafka %s (transaction.version=%d) started in %.1fs at %s", kafkabroker.Version(), txn, time.Since(t0).Seconds(), b.Addr())
	p.brokers[txn] = b
	return b
}

// close stops the shared brokers and removes their data.
func (p *kafkaPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.brokers {
		if err := b.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared Apache Kafka:", err)
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// createTopic creates topic with partitions and configs on the broker at
// addr and waits until the broker lists it (see waitTopic).
func createTopic(ctx context.Context, t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitTopic(t, addr, topic)
}

// waitProducing waits until the load generator gen says it is producing
// to topic and the broker at addr lists topic (see waitTopic).
func waitProducing(t *testing.T, gen *proc, addr, topic string) {
	t.Helper()
	gen.waitLine(t, "producing", 30*time.Second)
	waitTopic(t, addr, topic)
}

// waitTopic waits until the broker at addr lists topic with its
// partitions and their leaders: Apache Kafka answers CreateTopics before
// its metadata lists the topic (kfake does not), and a worker refuses to
// start on an input topic it cannot see.
func waitTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	seen := waitFor(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		td, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), topic) // a fresh answer, not kgo's cached one
		if err != nil || !td.Has(topic) || td[topic].Err != nil || len(td[topic].Partitions) == 0 {
			return false
		}
		for _, p := range td[topic].Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	if !seen {
		t.Fatalf("topic %s not in the broker's metadata", topic)
	}
}

// loadDone waits for the load generator gen to end and fails the test if
// it did not produce all it was asked to.
func loadDone(t *testing.T, gen *proc) {
	t.Helper()
	<-gen.done
	if gen.werr != nil {
		t.Fatalf("%s: %v\n%s", gen.name, gen.werr, gen.err)
	}
}
