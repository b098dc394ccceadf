package app

import (
	"testing"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/decode"
)

func TestFromConfigFormats(t *testing.T) {
	c, err := config.Parse([]byte(`
brokers: ["127.0.0.1:1"]
topics: {input: [events, legacy], rewards: [clicks], output: out}
fields: {budget: campaign, key: user.id}
rewards: {budget: campaign, value: value}
format: {input: avro, rewards: protobuf, topics: [{topic: legacy, format: json}]}
schema_registry: {urls: ["http://127.0.0.1:1"], username: u, password: p}
budgets: [{name: spring, target: 100, period: 1h}]
`))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if parts.Registry == nil {
		t.Fatal("no registry source for avro topics")
	}
	for topic, want := range map[string]decode.Format{"events": decode.FormatAvro, "legacy": decode.FormatJSON} {
		if got := parts.Decoder.FormatOf(topic); got != want {
			t.Errorf("%s: %v, want %v", topic, got, want)
		}
	}
	// JSON only: no registry.
	c.Format = config.Format{}
	if parts, err = FromConfig(c); err != nil || parts.Registry != nil {
		t.Fatalf("json: registry %v, %v", parts.Registry, err)
	}
}
