package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/initcfg"
)

// Defaults of init's sample.
const (
	DefaultInitRecords = 1000
	DefaultInitTimeout = 15 * time.Second
	maxInitRecords     = 100_000
)

var initCmd = &command{
	name:    "init",
	summary: "write a starter config from the records of your topic (reads only)",
	doc: `Samples the newest records of --topic (at most --records, shared out between
its partitions, within --timeout), finds their format (JSON, or Avro or
Protobuf in the schema registry's wire format: give --registry), lists the
field paths it saw with their types and example values, proposes which
paths hold the budget, the key, the id, the score and the time (by their
names and by their values: distinct counts, numeric ranges, times near now,
uniqueness), and writes a commented starter config with a window budget
per frequent budget value, which 'throttler validate' accepts:

  throttler init --brokers kafka:9092 --topic events --out throttler.yaml
  throttler validate throttler.yaml
  throttler run throttler.yaml

It only reads: it lists the topic and its offsets and fetches partitions
directly, committed records only; it joins no consumer group, commits no
offset and writes nothing to Kafka. The config goes to --out (default
stdout; an existing file is kept unless --force) and what the sample showed
to stderr (stdout with --out). Review the config: the proposals and the
budgets' targets are a start, not a decision.`,
	setup: func(fs *flag.FlagSet) action {
		kf := addKafkaFlags(fs, "127.0.0.1:9092")
		topic := fs.String("topic", "", "`topic` to sample (required)")
		reg := fs.String("registry", "", "schema registry `URL`, for Avro and Protobuf records")
		out := fs.String("out", "-", "write the config to `file` ('-': stdout)")
		force := fs.Bool("force", false, "replace --out if it exists")
		records := fs.Int("records", DefaultInitRecords, "sample at most this many `records`")
		timeout := fs.Duration("timeout", DefaultInitTimeout, "give up sampling after this `duration` (what was read by then is used)")
		return func(ctx context.Context, e *env) error {
			switch {
			case *topic == "":
				return &usageError{"flag --topic is required"}
			case *records < 1 || *records > maxInitRecords:
				return badFlag("records", "want 1 to %d, got %d", maxInitRecords, *records)
			case *timeout <= 0:
				return badFlag("timeout", "must be positive, got %v", *timeout)
			}
			if *out != "-" {
				if err := checkOutFile("out", *out); err != nil {
					return err
				}
				if _, err := os.Stat(*out); err == nil && !*force {
					return badFlag("out", "%s exists: choose another file, or add --force to replace it", *out)
				}
			}
			var schemas decode.Schemas
			if *reg != "" {
				src, err := schemaregistry.New([]string{*reg})
				if err != nil {
					return badFlag("registry", "%v", err)
				}
				schemas = src
			}
			opts, err := kf.opts()
			if err != nil {
				return err
			}
			if err := checkFatal(ctx, opts); err != nil {
				return err
			}
			start := time.Now()
			recs, truncated, err := initcfg.Sample(ctx, opts, *topic, *records, *timeout)
			if err != nil {
				return err
			}
			e.log.Info().Int("records", len(recs)).Bool("time_limit_reached", truncated).
				Dur("took", time.Since(start).Round(time.Millisecond)).Msg("sampled")
			actx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			rep, err := initcfg.Analyze(actx, *topic, recs, schemas, clock())
			if err != nil {
				return err
			}
			var cfg strings.Builder
			if err := initcfg.WriteConfig(&cfg, rep, initcfg.Target{Brokers: *kf.brokers, Registry: *reg}); err != nil {
				return err
			}
			summary := e.stderr
			if *out == "-" {
				if _, err := io.WriteString(e.stdout, cfg.String()); err != nil {
					return err
				}
			} else {
				if err := os.WriteFile(*out, []byte(cfg.String()), 0o644); err != nil {
					return err
				}
				summary = e.stdout
			}
			if err := initcfg.WriteSummary(summary, rep); err != nil {
				return err
			}
			if *out != "-" {
				fmt.Fprintf(summary, "wrote %s: check it with 'throttler validate %s', run a worker with 'throttler run %s'\n", *out, *out, *out)
			}
			return nil
		}
	},
}
