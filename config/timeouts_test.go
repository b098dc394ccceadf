package config

import (
	"testing"
	"time"
)

func TestTimeouts(t *testing.T) {
	c, err := Parse([]byte(`brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign}
budgets: [{name: a, target: 10, period: 1m}]
timeouts: {session: 6s, rebalance: 5s, heartbeat: 500ms, transaction: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	exp := Timeouts{Session: 6 * time.Second, Rebalance: 5 * time.Second, Heartbeat: 500 * time.Millisecond, Transaction: 10 * time.Second}
	if c.Timeouts != exp {
		t.Fatalf("timeouts %+v, want %+v", c.Timeouts, exp)
	}
	for _, tc := range []struct {
		name string
		t    Timeouts
		want []want
	}{
		{"unset", Timeouts{}, nil},
		{"negative", Timeouts{Session: -time.Second, Transaction: -1}, []want{
			{"timeouts.session", "must not be negative"}, {"timeouts.transaction", "must not be negative"}}},
		{"sub-millisecond", Timeouts{Rebalance: time.Microsecond}, []want{{"timeouts.rebalance", "at least 1ms"}}},
		{"heartbeat not below session", Timeouts{Session: time.Second, Heartbeat: time.Second}, []want{
			{"timeouts.heartbeat", "below timeouts.session"}}},
		{"transaction not above commit", Timeouts{Transaction: 100 * time.Millisecond}, []want{
			{"timeouts.transaction", "above commit_interval"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := example(t)
			c.Timeouts = tc.t
			checkProblems(t, c.Validate(), tc.want...)
		})
	}
}

// The group protocol: classic by default, consumer (KIP-848) on request;
// with consumer the broker owns the session timeout and the heartbeat
// interval, so setting them is an error, while the rebalance and
// transaction timeouts stay the worker's.
func TestGroupProtocol(t *testing.T) {
	c := example(t)
	if c.GroupProtocol != GroupProtocolClassic {
		t.Fatalf("default group protocol %q, want %q", c.GroupProtocol, GroupProtocolClassic)
	}
	c, err := Parse([]byte(`brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign}
budgets: [{name: a, target: 10, period: 1m}]
group_protocol: consumer
timeouts: {rebalance: 5s, transaction: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.GroupProtocol != GroupProtocolConsumer {
		t.Fatalf("group protocol %q, want consumer", c.GroupProtocol)
	}
	for _, tc := range []struct {
		name     string
		protocol GroupProtocol
		t        Timeouts
		want     []want
	}{
		{"unknown", "eager", Timeouts{}, []want{{"group_protocol", `must be "classic" or "consumer", got "eager"`}}},
		{"consumer with the broker's timeouts", GroupProtocolConsumer, Timeouts{Session: 6 * time.Second, Heartbeat: time.Second}, []want{
			{"timeouts.session", "group.consumer.session.timeout.ms"}, {"timeouts.heartbeat", "group.consumer.heartbeat.interval.ms"}}},
		{"classic with every timeout", GroupProtocolClassic, Timeouts{Session: 6 * time.Second, Heartbeat: time.Second, Rebalance: 5 * time.Second}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := example(t)
			c.GroupProtocol, c.Timeouts = tc.protocol, tc.t
			checkProblems(t, c.Validate(), tc.want...)
		})
	}
}
