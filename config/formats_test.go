package config

import "testing"

func TestFormats(t *testing.T) {
	c := example(t)
	if got := c.TopicFormat(c.Topics.Input[0]); got != FormatJSON {
		t.Errorf("default format %q", got)
	}
	c.Format = Format{Input: FormatAvro, Topics: []TopicFormat{{Topic: c.Topics.Rewards[0], Format: FormatProtobuf}}}
	c.SchemaRegistry = SchemaRegistry{URLs: []string{"http://registry:8081"}, Username: "u", Password: "p"}
	checkProblems(t, c.Validate())
	if c.TopicFormat(c.Topics.Input[0]) != FormatAvro || c.TopicFormat(c.Topics.Rewards[0]) != FormatProtobuf ||
		!c.Framed(c.Topics.Rewards) {
		t.Errorf("formats: input %s, rewards %s", c.TopicFormat(c.Topics.Input[0]), c.TopicFormat(c.Topics.Rewards[0]))
	}

	c = example(t)
	c.Format = Format{Input: "xml", Rewards: "avro", Topics: []TopicFormat{{Topic: "nope", Format: "avro"}}}
	c.Fields.Key = "users.#.id"
	checkProblems(t, c.Validate(),
		want{"format.input", "must be one of json, avro, protobuf"},
		want{"format.topics[0].topic", "is not an input or reward topic"},
		want{"schema_registry.urls", "must list"},
	)

	c = example(t)
	c.Format.Input = FormatProtobuf
	c.Fields.Key = "users.0"
	c.SchemaRegistry = SchemaRegistry{URLs: []string{"registry:8081"}, Password: "p"}
	checkProblems(t, c.Validate(),
		want{"fields.key", "dot-separated names"},
		want{"schema_registry.urls[0]", "want http://host:port"},
		want{"schema_registry.username", "is required with a password"},
	)
}

func TestFormatsYAML(t *testing.T) {
	_, err := Parse([]byte(`brokers: [k:9092]
topics: {input: [events], output: out}
fields: {budget: campaign}
format: {input: avro, topics: [{topic: events, format: protobuf}]}
schema_registry: {urls: ["https://registry:8081"], tls: {ca_file: /nonexistent/ca.pem}, timeout: 2s}
budgets: [{name: a, target: 10, period: 1h}]
`))
	checkProblems(t, err, want{"schema_registry.tls.ca_file", "cannot read"})
}
