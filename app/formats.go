package app

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/schemaregistry"
)

// framedFetchWait shortens the fetch long-poll of a worker with Avro or
// Protobuf topics: a partition resumed after waiting for its schema is
// not fetched until a fetch in flight for the others returns (up to
// FetchMaxWait, 5 s by default), which would delay delivery after the
// registry comes back by as much.
const framedFetchWait = 500 * time.Millisecond

// formats holds the decoder and worker options of a configuration's
// formats.
type formats struct {
	input, rewards []decode.Opt
	worker         []consumer.Opt
	source         *schemaregistry.Source // nil when every topic is JSON
}

// formatsOf returns the options of c's formats: the format of each
// consumed topic, the registry source when a topic is Avro or Protobuf
// (with its metrics, logs and readiness wired to the worker), and the
// paths the caps and rewards read.
func formatsOf(c *config.Config) (formats, error) {
	var f formats
	for _, t := range append(append([]string(nil), c.Topics.Input...), c.Topics.Rewards...) {
		df, err := decode.ParseFormat(c.TopicFormat(t))
		if err != nil {
			return f, err
		}
		f.input = append(f.input, decode.TopicFormat(t, df))
		f.rewards = append(f.rewards, decode.TopicFormat(t, df))
	}
	for _, cp := range c.Caps {
		f.input = append(f.input, decode.Paths(cp.Key, cp.Quantity))
	}
	f.rewards = append(f.rewards, decode.Paths(c.Rewards.Value))
	all := append(append([]string(nil), c.Topics.Input...), c.Topics.Rewards...)
	if !c.Framed(all) {
		return f, nil
	}
	src, err := newSource(c.SchemaRegistry)
	if err != nil {
		return f, err
	}
	f.source = src
	f.input = append(f.input, decode.WithSchemas(src))
	f.rewards = append(f.rewards, decode.WithSchemas(src))
	f.worker = []consumer.Opt{
		consumer.ReadyCheck(src.Ready),
		consumer.OnStart(watchSource(src)),
		consumer.ClientOpts(kgo.FetchMaxWait(framedFetchWait)),
	}
	return f, nil
}

// newSource returns the registry source of a configuration.
func newSource(r config.SchemaRegistry) (*schemaregistry.Source, error) {
	var opts []schemaregistry.Opt
	if r.TLS.On() {
		t, err := kafkaconn.TLSConfig(r.TLS)
		if err != nil {
			return nil, &consumer.ConfigError{Option: "schema_registry.tls", Reason: err.Error()}
		}
		opts = append(opts, schemaregistry.TLS(t))
	}
	if r.Username != "" {
		pass, p := r.ResolvePassword()
		if p != nil {
			return nil, &consumer.ConfigError{Option: "schema_registry." + p.Field, Reason: p.Reason}
		}
		opts = append(opts, schemaregistry.BasicAuth(r.Username, pass))
	}
	if r.Timeout > 0 {
		opts = append(opts, schemaregistry.RequestTimeout(r.Timeout))
	}
	return schemaregistry.New(r.URLs, opts...)
}

// watchSource registers the source's metrics with the worker's and logs
// with the worker's logger.
func watchSource(src *schemaregistry.Source) consumer.StartFunc {
	return func(_ context.Context, w *consumer.Worker) (func(), error) {
		src.SetLogger(w.Logger())
		for _, c := range src.Collectors() {
			if err := w.Registerer().Register(c); err != nil {
				var dup prometheus.AlreadyRegisteredError
				if !errors.As(err, &dup) {
					return nil, err
				}
			}
		}
		return func() {}, nil
	}
}
