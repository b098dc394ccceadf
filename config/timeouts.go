package config

import (
	"fmt"
	"time"
)

// Timeouts tune how soon the cluster notices a worker that is gone. Zero
// leaves a timeout at the Kafka client's default (franz-go: session 45s,
// rebalance 60s, heartbeat 3s, transaction 40s). With group_protocol
// consumer the broker decides the session timeout and the heartbeat
// interval, and setting them here is an error.
//
// A crashed worker's partitions move to the others once its session
// times out, and a transaction it left open holds back read_committed
// readers (and, on kfake, every partition move of the group) until the
// transaction times out or a worker with the same transactional id starts
// (`throttler run -transactional-id`). Shorter timeouts recover sooner;
// brokers bound them (Kafka's group.min.session.timeout.ms, 6s by
// default, and transaction.max.timeout.ms).
type Timeouts struct {
	// Session is the consumer group session timeout.
	Session time.Duration `yaml:"session"`
	// Rebalance is how long the group waits for members to rejoin in a
	// rebalance.
	Rebalance time.Duration `yaml:"rebalance"`
	// Heartbeat is how often a worker tells the group it is alive; below
	// Session.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Transaction is the transaction timeout (exactly-once); above
	// commit_interval.
	Transaction time.Duration `yaml:"transaction"`
}

// timeouts checks the timeouts section.
func (v *checker) timeouts(c *Config) {
	t := c.Timeouts
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"session", t.Session}, {"rebalance", t.Rebalance}, {"heartbeat", t.Heartbeat}, {"transaction", t.Transaction}} {
		switch {
		case f.d < 0:
			v.add("timeouts."+f.name, fmt.Sprintf("must not be negative, got %v", f.d))
		case f.d > 0 && f.d < time.Millisecond:
			v.add("timeouts."+f.name, fmt.Sprintf("must be at least 1ms (or 0 for the client's default), got %v", f.d))
		}
	}
	if c.GroupProtocol == GroupProtocolConsumer {
		// The broker decides these for KIP-848 groups: a value here would
		// do nothing.
		if t.Session > 0 {
			v.add("timeouts.session", "the broker sets it with group_protocol consumer (group.consumer.session.timeout.ms); remove it, or use group_protocol classic")
		}
		if t.Heartbeat > 0 {
			v.add("timeouts.heartbeat", "the broker sets it with group_protocol consumer (group.consumer.heartbeat.interval.ms); remove it, or use group_protocol classic")
		}
	}
	if t.Heartbeat > 0 && t.Session > 0 && t.Heartbeat >= t.Session {
		v.add("timeouts.heartbeat", fmt.Sprintf("must be below timeouts.session (%v), got %v", t.Session, t.Heartbeat))
	}
	if t.Transaction > 0 && c.CommitInterval > 0 && t.Transaction <= c.CommitInterval {
		v.add("timeouts.transaction", fmt.Sprintf("must be above commit_interval (%v), got %v", c.CommitInterval, t.Transaction))
	}
}
