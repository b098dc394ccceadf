package suite

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

	"github.com/throttler/throttler/internal/memdir"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

// BrokerKind is a kind of broker and the workers' group protocol on it.
type BrokerKind struct {
	Name      string
	Kafka     bool   // Apache Kafka started by the test; else kfake
	External  bool   // the cluster at THROTTLER_EXTERNAL_BROKERS
	Container bool   // Kafka in a container (testcontainers-go)
	Txn       int    // Kafka's transaction.version
	Protocol  string // the workers' group_protocol
}

var (
	KfakeKind  = BrokerKind{Name: "kfake", Protocol: "classic"}
	KafkaKind  = BrokerKind{Name: "kafka", Kafka: true, Txn: 2, Protocol: "classic"}
	Kip848Kind = BrokerKind{Name: "kafka-kip848", Kafka: true, Txn: 2, Protocol: "consumer"}
	Txn1Kind   = BrokerKind{Name: "kafka-txn1", Kafka: true, Txn: 1, Protocol: "classic"}
	// ExternalKind is the cluster at THROTTLER_EXTERNAL_BROKERS, only
	// on request.
	ExternalKind = BrokerKind{Name: "external", External: true, Protocol: "classic"}
	// ContainerKind is Kafka in a container, where Docker answers.
	ContainerKind = BrokerKind{Name: "container", Container: true, Protocol: "classic"}

	// EveryKind is every kind, the crash test's default.
	EveryKind = []BrokerKind{KfakeKind, KafkaKind, Kip848Kind, Txn1Kind}
	// BothBrokers is kfake and Kafka, the default of most tests.
	BothBrokers = []BrokerKind{KfakeKind, KafkaKind}
	// KafkaOnly is the default of the tests of what a real broker does.
	KafkaOnly = []BrokerKind{KafkaKind}
)

// KindsOf returns the kinds a test runs on: THROTTLER_BROKERS, or def.
func KindsOf(t *testing.T, def []BrokerKind) []BrokerKind {
	s := os.Getenv("THROTTLER_BROKERS")
	if s == "" {
		return def
	}
	var kinds []BrokerKind
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, k := range append(EveryKind, ExternalKind, ContainerKind) {
			if k.Name == strings.TrimSpace(name) {
				kinds, found = append(kinds, k), true
			}
		}
		if !found {
			t.Fatalf("THROTTLER_BROKERS=%q: no kind %q (kinds: kfake, kafka, kafka-kip848, kafka-txn1, container, external)", s, name)
		}
	}
	return kinds
}

// OnBrokers runs body once per kind of broker (see kindsOf), each as a
// subtest named after its kind. The Kafka kinds skip where Java or the
// jars are missing.
func OnBrokers(t *testing.T, def []BrokerKind, body func(t *testing.T, k BrokerKind)) {
	t.Helper()
	for _, k := range KindsOf(t, def) {
		t.Run(k.Name, func(t *testing.T) {
			if k.Kafka {
				kafkabroker.Skip(t)
			}
			body(t, k)
		})
	}
}

// GroupTimeouts are the workers' group and transaction timeouts; zero
// leaves one at its default.
type GroupTimeouts struct {
	Session, Heartbeat, Rebalance, Transaction time.Duration
}

// FastTimeouts notice a lost worker within seconds.
var FastTimeouts = GroupTimeouts{Session: 6 * time.Second, Heartbeat: 500 * time.Millisecond, Rebalance: 5 * time.Second, Transaction: 8 * time.Second}

// GroupYAML returns the workers' group_protocol and timeouts lines. With
// KIP-848 the broker decides the session timeout and the heartbeat
// interval (kafkabroker's defaults: 6 s and 500 ms), so they are left out.
func (k BrokerKind) GroupYAML(to GroupTimeouts) string {
	if k.Protocol == "consumer" {
		to.Session, to.Heartbeat = 0, 0
	}
	var parts []string
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"session", to.Session}, {"heartbeat", to.Heartbeat}, {"rebalance", to.Rebalance}, {"transaction", to.Transaction}} {
		if f.d > 0 {
			parts = append(parts, fmt.Sprintf("%s: %v", f.name, f.d))
		}
	}
	s := "group_protocol: " + k.Protocol + "\n"
	if len(parts) > 0 {
		s += "timeouts: {" + strings.Join(parts, ", ") + "}\n"
	}
	return s
}

// Cluster is a running broker of a test.
type Cluster struct {
	Kind   BrokerKind
	Addr   string
	Prefix string // of the topics and groups of the test

	// kfake: the `throttler broker` process, its data dir and flags.
	Brk        *Proc
	Dir        string
	Partitions int
	Flags      []string

	Kafka *kafkabroker.Broker
	node  int // the node of a cluster of several that Stop stops next
}

// OwnCluster starts a broker of kind k for t alone, which t may stop and
// kill: `throttler broker` (partitions, more flags) or Apache Kafka
// (more options).
func OwnCluster(t *testing.T, k BrokerKind, partitions int, flags []string, opts ...kafkabroker.Opt) *Cluster {
	t.Helper()
	if k.External || k.Container {
		t.Skip("skipped on an external or container cluster: the test stops or configures its broker")
	}
	c := &Cluster{Kind: k, Partitions: partitions, Flags: flags}
	if k.Kafka {
		c.Kafka = kafkabroker.Start(t, append([]kafkabroker.Opt{kafkabroker.TransactionVersion(k.Txn)}, opts...)...)
		c.Addr = c.Kafka.Addr()
		return c
	}
	c.Dir = BrokerDir(t)
	c.Brk, c.Addr = StartBrokerAt(t, "127.0.0.1:0", c.Dir, partitions, flags...)
	return c
}

// SharedCluster gives t a broker of kind k that t must not stop: for
// kfake a `throttler broker` of its own, for Kafka the package's broker of
// the kind's transaction version, with topics and groups named with a
// prefix of t's own (c.name), deleted when t ends.
func SharedCluster(t *testing.T, k BrokerKind, partitions int, flags ...string) *Cluster {
	t.Helper()
	if k.External || k.Container {
		addrs := os.Getenv("THROTTLER_EXTERNAL_BROKERS")
		if k.Container {
			addrs = SharedContainer.Get(t)
		}
		if addrs == "" {
			t.Fatal("the external kind needs THROTTLER_EXTERNAL_BROKERS=host:port (a seed broker)")
		}
		c := &Cluster{Kind: k, Addr: addrs, Prefix: fmt.Sprintf("it-%s-t%d-", RunID, NextPrefix.Add(1))}
		t.Cleanup(func() { c.DeleteTopics(t) })
		return c
	}
	if !k.Kafka {
		return OwnCluster(t, k, partitions, flags)
	}
	b := SharedKafka.Get(t, k.Txn)
	c := &Cluster{Kind: k, Addr: b.Addr(), Kafka: b, Prefix: fmt.Sprintf("t%d-", NextPrefix.Add(1))}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- the shared Apache Kafka's log (WARN and up, tail; other tests' lines too):\n%s", b.LogTail(30))
			kafkabroker.KeepLog(t, b)
		}
		c.DeleteTopics(t)
	})
	return c
}

// Name returns the name of the test's topic or group s on the cluster.
func (c *Cluster) Name(s string) string { return c.Prefix + s }

// Stop stops the broker with sig (SIGTERM: gracefully; SIGKILL) and
// waits until it is gone; the error says why a graceful stop failed. Of
// an Apache Kafka cluster of several nodes it stops one node, each in
// turn (a rolling restart).
func (c *Cluster) Stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if c.Kafka != nil {
		if c.Kafka.Nodes() > 1 {
			t.Logf("stopping node %d of %d", c.node+1, c.Kafka.Nodes())
		}
		if sig == syscall.SIGKILL {
			c.Kafka.KillNode(c.node)
			return nil
		}
		return c.Kafka.StopNode(c.node)
	}
	err := c.Brk.Stop(t, sig, 30*time.Second)
	if sig == syscall.SIGKILL && c.Brk.Exited() {
		return nil // "signal: killed" is what was asked for
	}
	return err
}

// Restart starts the stopped broker (node) again on its address and data.
func (c *Cluster) Restart(t *testing.T) {
	t.Helper()
	if c.Kafka != nil {
		err := c.Kafka.RestartNode(c.node)
		c.node = (c.node + 1) % c.Kafka.Nodes()
		if err != nil {
			t.Fatalf("restarting Apache Kafka: %v", err)
		}
		return
	}
	var again string
	c.Brk, again = StartBrokerAt(t, c.Addr, c.Dir, c.Partitions, c.Flags...)
	if again != c.Addr {
		t.Fatalf("restarted broker on %s, want %s", again, c.Addr)
	}
}

// DeleteTopics deletes the topics of the test's prefix.
func (c *Cluster) DeleteTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(c.Addr)...))
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
		if strings.HasPrefix(name, c.Prefix) {
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

// NextPrefix numbers the tests on shared brokers.
var NextPrefix atomic.Int64

// RunID tells this run's topics from other runs' on an external cluster.
var RunID = strconv.FormatInt(time.Now().UnixNano()%(1<<40), 36)

// SharedKafka holds the package's Apache Kafka brokers, one per
// transaction version, started on first use and stopped by Main.
var SharedKafka = &KafkaPool{Brokers: map[int]*kafkabroker.Broker{}}

type KafkaPool struct {
	Mu      sync.Mutex
	Dir     string
	Brokers map[int]*kafkabroker.Broker
	Err     error
}

// Get returns the broker of transaction version txn, starting it.
func (p *KafkaPool) Get(t *testing.T, txn int) *kafkabroker.Broker {
	t.Helper()
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if b := p.Brokers[txn]; b != nil {
		return b
	}
	if p.Err != nil {
		t.Fatalf("the shared Apache Kafka did not start: %v", p.Err)
	}
	if p.Dir == "" {
		if p.Dir, p.Err = memdir.MkdirTemp("throttler-it-kafka-"); p.Err != nil {
			t.Fatal(p.Err)
		}
	}
	dir, err := os.MkdirTemp(p.Dir, fmt.Sprintf("txn%d-", txn))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b, err := kafkabroker.New(dir, kafkabroker.TransactionVersion(txn))
	if err != nil {
		p.Err = err
		t.Fatalf("starting the shared Apache Kafka %s: %v", kafkabroker.Version(), err)
	}
	t.Logf("the shared Apache Kafka %s (transaction.version=%d) started in %.1fs at %s", kafkabroker.Version(), txn, time.Since(t0).Seconds(), b.Addr())
	p.Brokers[txn] = b
	return b
}

// Close stops the shared brokers and removes their data.
func (p *KafkaPool) Close() {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	for _, b := range p.Brokers {
		if err := b.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared Apache Kafka:", err)
		}
	}
	if p.Dir != "" {
		memdir.RemoveAll(p.Dir)
	}
}

// CreateTopic creates topic with partitions and configs on the broker at
// addr and waits until the broker lists it (see waitTopic).
func CreateTopic(ctx context.Context, t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addr)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	WaitTopic(t, addr, topic)
}

// WaitProducing waits until the load generator gen says it is producing
// to topic and the broker at addr lists topic (see waitTopic).
func WaitProducing(t *testing.T, gen *Proc, addr, topic string) {
	t.Helper()
	gen.WaitLine(t, "producing", 30*time.Second)
	WaitTopic(t, addr, topic)
}

// WaitTopic waits until the broker at addr lists topic with its
// partitions and their leaders: Apache Kafka answers CreateTopics before
// its metadata lists the topic (kfake does not), and a worker refuses to
// start on an input topic it cannot see.
func WaitTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addr)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	seen := WaitFor(30*time.Second, func() bool {
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

// LoadDone waits for the load generator gen to end and fails the test if
// it did not produce all it was asked to.
func LoadDone(t *testing.T, gen *Proc) {
	t.Helper()
	<-gen.Done
	if gen.Werr != nil {
		t.Fatalf("%s: %v\n%s", gen.Name, gen.Werr, gen.Err)
	}
}
