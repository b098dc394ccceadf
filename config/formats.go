package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Formats of topic values (Format.Input, Format.Rewards, TopicFormat).
const (
	FormatJSON     = "json"
	FormatAvro     = "avro"
	FormatProtobuf = "protobuf"
)

// FormatNames lists the formats, the default first.
var FormatNames = []string{FormatJSON, FormatAvro, FormatProtobuf}

// Format says how the values of the input and reward topics are encoded.
// Avro and Protobuf values are in the schema registry wire format (a zero
// magic byte, the schema id, for Protobuf the message indexes, the
// payload) and need SchemaRegistry. See docs/formats.md.
type Format struct {
	// Input is the format of the input topics: json, avro or protobuf.
	// Default json.
	Input string `yaml:"input"`
	// Rewards is the format of the reward topics. Default json.
	Rewards string `yaml:"rewards"`
	// Topics sets the format of single topics, over Input and Rewards.
	Topics []TopicFormat `yaml:"topics"`
}

// TopicFormat is the format of one input or reward topic.
type TopicFormat struct {
	Topic  string `yaml:"topic"`
	Format string `yaml:"format"`
}

// SchemaRegistry locates the schema registry of Avro and Protobuf topics
// (Confluent's REST API: Confluent Schema Registry, Redpanda, Karapace,
// Apicurio). Required when a topic is not JSON.
type SchemaRegistry struct {
	// URLs of the registry, tried in order: http://host:port or https://.
	URLs []string `yaml:"urls"`
	// TLS configures https URLs, as security.tls the brokers.
	TLS TLS `yaml:"tls"`
	// Username turns on HTTP basic authentication; exactly one of
	// Password, PasswordFile and PasswordEnv then gives the password.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
	// Timeout bounds one request. Default 5s.
	Timeout time.Duration `yaml:"timeout"`
}

// ResolvePassword returns the registry's password (see SASL's).
func (r SchemaRegistry) ResolvePassword() (string, *FieldProblem) {
	return SASL{Password: r.Password, PasswordFile: r.PasswordFile, PasswordEnv: r.PasswordEnv}.ResolvePassword()
}

// TopicFormat returns the format of an input or reward topic.
func (c *Config) TopicFormat(topic string) string {
	for _, tf := range c.Format.Topics {
		if tf.Topic == topic {
			return orJSON(tf.Format)
		}
	}
	if slices.Contains(c.Topics.Rewards, topic) {
		return orJSON(c.Format.Rewards)
	}
	return orJSON(c.Format.Input)
}

func orJSON(f string) string {
	if f == "" {
		return FormatJSON
	}
	return f
}

// Framed reports whether a topic of topics is Avro or Protobuf.
func (c *Config) Framed(topics []string) bool {
	for _, t := range topics {
		if f := c.TopicFormat(t); f == FormatAvro || f == FormatProtobuf {
			return true
		}
	}
	return false
}

// formats checks the format and schema_registry sections.
func (v *checker) formats(c *Config) {
	f := c.Format
	known := func(path, name string) {
		if name != "" && !slices.Contains(FormatNames, name) {
			v.add(path, fmt.Sprintf("must be one of %s, got %q", strings.Join(FormatNames, ", "), name))
		}
	}
	known("format.input", f.Input)
	known("format.rewards", f.Rewards)
	consumed := append(slices.Clone(c.Topics.Input), c.Topics.Rewards...)
	for i, tf := range f.Topics {
		p := "format.topics[" + strconv.Itoa(i) + "]"
		known(p+".format", tf.Format)
		if !slices.Contains(consumed, tf.Topic) {
			v.add(p+".topic", fmt.Sprintf("%q is not an input or reward topic", tf.Topic))
		}
	}
	inputs, rewards := c.Framed(c.Topics.Input), c.Framed(c.Topics.Rewards)
	if inputs || rewards {
		v.registry(c.SchemaRegistry)
	}
	if inputs {
		fl := c.Fields
		for path, p := range map[string]string{"fields.budget": fl.Budget, "fields.key": fl.Key, "fields.id": fl.ID, "fields.score": fl.Score, "fields.time": fl.Time} {
			v.namePath(path, p)
		}
		for i, cp := range c.Caps {
			v.namePath("caps["+strconv.Itoa(i)+"].key", cp.Key)
			v.namePath("caps["+strconv.Itoa(i)+"].quantity", cp.Quantity)
		}
	}
	if rewards {
		v.namePath("rewards.budget", c.Rewards.Budget)
		v.namePath("rewards.value", c.Rewards.Value)
	}
}

// registry checks the schema_registry section, needed by a framed topic.
func (v *checker) registry(r SchemaRegistry) {
	if len(r.URLs) == 0 {
		v.add("schema_registry.urls", "must list the schema registry's URL: a topic is avro or protobuf")
	}
	for i, u := range r.URLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			v.add("schema_registry.urls["+strconv.Itoa(i)+"]", fmt.Sprintf("want http://host:port or https://host:port, got %q", redactURL(u)))
		}
	}
	for _, p := range (Security{TLS: r.TLS}).Check() {
		v.add("schema_registry."+p.Field, p.Reason)
	}
	if r.Timeout < 0 {
		v.add("schema_registry.timeout", fmt.Sprintf("must not be negative, got %v", r.Timeout))
	}
	if r.Username == "" {
		if r.Password != "" || r.PasswordFile != "" || r.PasswordEnv != "" {
			v.add("schema_registry.username", "must be set with a password")
		}
		return
	}
	if _, p := r.ResolvePassword(); p != nil {
		v.add("schema_registry."+p.Field, p.Reason)
	}
}

// namePath checks that p (when set) is dot-separated names, the only
// paths of Avro and Protobuf fields.
func (v *checker) namePath(path, p string) {
	if p == "" {
		return
	}
	for _, seg := range strings.Split(p, ".") {
		digits := strings.Trim(seg, "0123456789") == ""
		if digits || strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			v.add(path, fmt.Sprintf("%q: fields of avro and protobuf events are named by dot-separated names (letters, digits, '_', '-')", p))
			return
		}
	}
}

// redactURL returns u without the password it may carry (user:password@),
// for messages.
func redactURL(u string) string {
	if pu, err := url.Parse(u); err == nil {
		return pu.Redacted()
	}
	if i := strings.LastIndex(u, "@"); i >= 0 {
		return "xxxxx@" + u[i+1:]
	}
	return u
}
