package consumer

import (
	"testing"

	"github.com/throttler/throttler/config"
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
	w, tree, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Controller("spring") == nil || !w.scored || w.cfg.topics.DeadLetter != "throttler.dead-letter" || w.HTTPAddr() == nil {
		t.Fatalf("worker %+v", w.cfg)
	}
	var d Decoded
	v := []byte(`{"campaign":"spring","user":"u","clicks":0}`)
	if err := w.dec.Decode(nil, v, w.cfg.now(), &d); err != nil || w.dec.Score(v, &d) != nil || d.Key != "u" {
		t.Fatalf("%+v %v", d, err)
	}
}
