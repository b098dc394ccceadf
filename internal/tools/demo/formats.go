package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// eventFormat is the format of the demo's events: JSON, or Avro or
// Protobuf through a schema registry run in the process.
type eventFormat struct {
	enc  loadgen.Encoder
	stop func()
}

// formatConfig starts the registry of c.Format (none for JSON), registers
// the events' schema and returns the workers' config reading that format
// on the input and the reward topic (clicks use the events' schema).
func formatConfig(ctx context.Context, c Config, brokers []string, begin, end time.Time) (eventFormat, *config.Config, error) {
	fm := eventFormat{stop: func() {}}
	cfg, err := workerConfig(c, brokers, begin, end)
	if err != nil || c.Format == "" || c.Format == loadgen.FormatJSON {
		return fm, cfg, err
	}
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		return fm, nil, err
	}
	fm.stop = srv.Close
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		return fm, nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if fm.enc, err = loadgen.Register(rctx, cl, topicEvents+"-value", c.Format); err != nil {
		return fm, nil, err
	}
	cfg.Format.Input, cfg.Format.Rewards = c.Format, c.Format
	cfg.SchemaRegistry.URLs = []string{srv.URL()}
	if err := cfg.Validate(); err != nil {
		return fm, nil, fmt.Errorf("demo config for %s: %w", c.Format, err)
	}
	return fm, cfg, nil
}
