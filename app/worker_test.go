package app

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
)

func TestFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(`
brokers: ["127.0.0.1:1"]
topics:
  input: [events]
  output: out
fields:
  budget: campaign
  key: user
  score_expr: "log(1 + clicks)"
budgets:
  - name: spring
    target: 100
    period: 1h
    scored: true
http:
  listen: "127.0.0.1:0"
`))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if !hasBudget(parts.Tree, "spring") || !parts.Decoder.Scored() {
		t.Fatalf("parts %+v", parts)
	}
	var d decode.Decoded
	v := []byte(`{"campaign":"spring","user":"u","clicks":0}`)
	if err := parts.Decoder.Decode(nil, v, time.Now(), &d); err != nil || parts.Decoder.Score(v, &d) != nil || d.Key != "u" {
		t.Fatalf("%+v %v", d, err)
	}
	w, tree, err := NewWorker(c)
	if err != nil {
		t.Fatal(err)
	}
	if !hasBudget(tree, "spring") || w.Topics().DeadLetter != "throttler.dead-letter" || w.HTTPAddr() == nil {
		t.Fatalf("worker topics %+v, http %v", w.Topics(), w.HTTPAddr())
	}
}

func TestFromConfigTimeouts(t *testing.T) {
	c, err := config.Parse([]byte(`
brokers: ["127.0.0.1:1"]
topics: {input: [events], output: out}
fields: {budget: campaign}
budgets: [{name: spring, target: 100, period: 1h}]
timeouts: {session: 6s, rebalance: 5s, heartbeat: 500ms, transaction: 7s}
http: {listen: "127.0.0.1:0"}
`))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(parts.ClientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for opt, want := range map[string]struct {
		fn any
		d  time.Duration
	}{
		"session":     {kgo.SessionTimeout, 6 * time.Second},
		"rebalance":   {kgo.RebalanceTimeout, 5 * time.Second},
		"heartbeat":   {kgo.HeartbeatInterval, 500 * time.Millisecond},
		"transaction": {kgo.TransactionTimeout, 7 * time.Second},
	} {
		if got := cl.OptValue(want.fn); got != want.d {
			t.Errorf("%s timeout %v, want %v", opt, got, want.d)
		}
	}
}

func hasBudget(tree *flow.Tree, name string) bool {
	_, ok := tree.Budget(name)
	return ok
}
