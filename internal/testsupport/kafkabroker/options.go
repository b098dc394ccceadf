package kafkabroker

import (
	"fmt"
	"strconv"
	"time"
)

// An Opt changes how New starts a broker.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

type cfg struct {
	nodes      int
	txnVersion int
	props      map[string]string
}

// The JVM's maximum heap, and how long a start or restart waits for a
// node to answer (a JVM on a loaded 2-core machine).
const (
	jvmHeap      = "512m"
	startTimeout = 2 * time.Minute
)

func defaultCfg() cfg {
	return cfg{
		nodes: 1,
		props: map[string]string{
			"offsets.topic.num.partitions":          "10",
			"transaction.state.log.min.isr":         "1",
			"transaction.state.log.num.partitions":  "10",
			"share.coordinator.state.topic.min.isr": "1",
			"group.initial.rebalance.delay.ms":      "0",
			"auto.create.topics.enable":             "false",
			"log.cleaner.dedupe.buffer.size":        strconv.Itoa(16 << 20),
			// KIP-848 groups: the session and heartbeat the classic groups
			// of the tests ask for (timeouts: {session: 6s, heartbeat:
			// 500ms}); Kafka's defaults are 45 s and 5 s, with minimums
			// that forbid less.
			"group.consumer.session.timeout.ms":        "6000",
			"group.consumer.min.session.timeout.ms":    "1000",
			"group.consumer.heartbeat.interval.ms":     "500",
			"group.consumer.min.heartbeat.interval.ms": "100",
			// A broker restarted after a SIGKILL registers again only once
			// the controller has given up its previous registration: after
			// broker.session.timeout.ms (9 s by default).
			"broker.session.timeout.ms":    "4000",
			"broker.heartbeat.interval.ms": "500",
		},
	}
}

// Nodes makes the cluster n nodes (1 to 5), each broker and controller
// in a JVM of its own and each a voter of the controller quorum, which
// rides out the loss of a minority. Topics created without a replication
// factor, and the internal topics, get min(n, 3) replicas, so that a
// stopped node's partitions move to another leader (a controlled
// shutdown moves them first) as they do on a production cluster.
func Nodes(n int) Opt { return optFunc(func(c *cfg) { c.nodes = n }) }

// replication is the properties of the replication factors, from the
// number of nodes.
func (c *cfg) replication() map[string]string {
	rf := strconv.Itoa(min(c.nodes, 3))
	return map[string]string{
		"default.replication.factor":                       rf,
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"share.coordinator.state.topic.replication.factor": rf,
	}
}

// TransactionVersion formats the cluster with transaction.version v: 2
// (KIP-890's server-side defence, the default of a fresh Kafka 4 cluster)
// or 1 (the protocol of Kafka 3.x clusters, and of 4.x clusters upgraded
// from them). 0 keeps the release's default.
func TransactionVersion(v int) Opt { return optFunc(func(c *cfg) { c.txnVersion = v }) }

// Compaction makes the log cleaner busy: it looks for work every
// backoff, segments roll every roll (so that records leave the active
// segment, which is never cleaned), and a log is cleaned once a share
// dirtyRatio of it is dirty. Kafka's defaults are 15 s, 7 days and 0.5.
func Compaction(backoff, roll time.Duration, dirtyRatio float64) Opt {
	return optFunc(func(c *cfg) {
		c.props["log.cleaner.backoff.ms"] = ms(backoff)
		c.props["log.roll.ms"] = ms(roll)
		c.props["log.cleaner.min.cleanable.ratio"] = strconv.FormatFloat(dirtyRatio, 'f', -1, 64)
	})
}

// Property sets a server property (server.properties), over the
// package's defaults. Listeners, node, quorum, log directories and
// replication factors are the package's own and cannot be set.
func Property(key, value string) Opt { return optFunc(func(c *cfg) { c.props[key] = value }) }

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// reserved are the properties the package sets from its own state.
var reserved = map[string]bool{
	"process.roles": true, "node.id": true, "listeners": true, "advertised.listeners": true,
	"controller.listener.names": true, "controller.quorum.bootstrap.servers": true,
	"controller.quorum.voters": true, "listener.security.protocol.map": true,
	"default.replication.factor": true, "offsets.topic.replication.factor": true,
	"transaction.state.log.replication.factor": true, "share.coordinator.state.topic.replication.factor": true,
	"inter.broker.listener.name": true, "log.dirs": true, "log.dir": true, "metadata.log.dir": true,
}

func (c *cfg) validate() error {
	for k := range c.props {
		if reserved[k] {
			return fmt.Errorf("kafkabroker: property %s is set by the package", k)
		}
	}
	if c.nodes < 1 || c.nodes > 5 {
		return fmt.Errorf("kafkabroker: %d nodes: want 1 to 5", c.nodes)
	}
	if c.txnVersion < 0 || c.txnVersion > 2 {
		return fmt.Errorf("kafkabroker: transaction version %d: want 0 (the release's default), 1 or 2", c.txnVersion)
	}
	return nil
}
