package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// setupTimeout bounds reaching the brokers and creating the topic.
const setupTimeout = 30 * time.Second

var loadgenCmd = &command{
	name:    "loadgen",
	summary: "produce synthetic events (JSON, Avro or Protobuf) at a steady rate",
	doc: `Produces synthetic events to a topic, creating it if missing:

  {"id":"1-42","user":"user-3","campaign":"a","score":0.61,"ts":1795341600000}

id is "<seed>-<sequence>"; user follows a Zipf distribution over --users
users; campaign is drawn from --budgets (uniform, or weighted as "a:3,b:1")
and from --spread N budgets named --spread-prefix and a zero-padded rank
("light-00042"), drawn by rank: Zipf with exponent --spread-skew (rank 0 the
most frequent), or uniform with --spread-skew 0. The spread takes
--spread-weight against the --budgets weights (default their sum: half of
the events; all of them without --budgets). For example, 10 paced budgets
with half the traffic and 99,990 light ones over Zipf traffic:

  --budgets paced-0,paced-1,…,paced-9 --spread 99990 --spread-prefix light-

score is uniform in [0,1); ts is the event time in Unix milliseconds. The
record key is the user. The same --seed gives the same events.

With --format avro or protobuf, the events have the same fields in that
format, in the schema registry wire format: loadgen registers its schema
as --subject (default "<topic>-value") with the registry at --registry and
frames every event with the schema's id (docs/formats.md shows both
schemas).

Paces to --rate events per second (0: as fast as possible) and stops after
--duration or --count, or on SIGINT; then prints a JSON summary on stdout:
{"produced":N,"seconds":S,"rate":R}.`,
	setup: func(fs *flag.FlagSet) action {
		kf := addKafkaFlags(fs, "127.0.0.1:9092")
		topic := fs.String("topic", "events", "`topic` to produce to")
		rate := fs.Float64("rate", 1000, "target `rate` in events per second; 0 means as fast as possible")
		duration := fs.Duration("duration", 0, "stop after this long (default: no limit)")
		count := fs.Uint64("count", 0, "stop after this many events (default: no limit)")
		flushTimeout := fs.Duration("flush-timeout", loadgen.DefaultFlushTimeout, "how long the last records may wait to be acknowledged at the end (a broker restarting then)")
		var budgets []loadgen.Budget
		fs.Func("budgets", "campaigns to draw from: `a,b,c` (uniform) or a:3,b:1 (weighted); required without --spread", func(s string) error {
			b, err := loadgen.ParseBudgets(s)
			budgets = b
			return err
		})
		users := fs.Int("users", loadgen.DefaultUsers, "number of distinct `users`")
		skew := fs.Float64("skew", loadgen.DefaultSkew, "Zipf `exponent` of user popularity, above 1")
		seed := fs.Uint64("seed", 1, "random `seed`; also prefixes the event ids")
		parts := fs.Int("partitions", 12, "partition `count` if the topic has to be created")
		format := fs.String("format", loadgen.FormatJSON, "event `format`: json, avro or protobuf")
		registryURL := fs.String("registry", "", "schema registry `URL` (avro and protobuf)")
		subject := fs.String("subject", "", "registry `subject` of the schema (default \"<topic>-value\")")
		var spread loadgen.Spread
		fs.IntVar(&spread.Count, "spread", 0, "`count` of light budgets drawn by rank, besides --budgets")
		fs.StringVar(&spread.Prefix, "spread-prefix", loadgen.DefaultSpreadPrefix, "name `prefix` of the --spread budgets")
		fs.Float64Var(&spread.Skew, "spread-skew", loadgen.DefaultSkew, "Zipf `exponent` (above 1) of the --spread budgets' ranks; 0: uniform")
		fs.Float64Var(&spread.Weight, "spread-weight", 0, "`weight` of the --spread budgets together against --budgets' (default: their sum)")
		return func(ctx context.Context, e *env) error {
			switch {
			case len(budgets) == 0 && spread.Count == 0:
				return &usageError{"flag --budgets is required (or --spread)"}
			case spread.Count < 0:
				return badFlag("spread", "must be at least 0, got %d", spread.Count)
			case spread.Skew != 0 && !(spread.Skew > 1) || math.IsInf(spread.Skew, 0):
				return badFlag("spread-skew", "must be 0 (uniform) or a number above 1, got %v", spread.Skew)
			case spread.Weight < 0 || math.IsNaN(spread.Weight) || math.IsInf(spread.Weight, 0):
				return badFlag("spread-weight", "must be a positive number, got %v", spread.Weight)
			case math.IsNaN(*rate) || math.IsInf(*rate, 0) || *rate < 0:
				return badFlag("rate", "must be a number at least 0, got %v", *rate)
			case *duration < 0:
				return badFlag("duration", "must not be negative, got %v", *duration)
			case *flushTimeout <= 0:
				return badFlag("flush-timeout", "must be positive, got %v", *flushTimeout)
			case *users < 1:
				return badFlag("users", "must be at least 1, got %d", *users)
			case !(*skew > 1) || math.IsInf(*skew, 0):
				return badFlag("skew", "must be a number above 1, got %v", *skew)
			case *parts < 1 || *parts > 1<<20:
				return badFlag("partitions", "must be at least 1, got %d", *parts)
			case *topic == "":
				return badFlag("topic", "must not be empty")
			case *format != loadgen.FormatJSON && *format != loadgen.FormatAvro && *format != loadgen.FormatProtobuf:
				return badFlag("format", "want json, avro or protobuf, got %q", *format)
			case *format != loadgen.FormatJSON && *registryURL == "":
				return badFlag("registry", "is required with --format %s", *format)
			}
			opts, err := kf.opts()
			if err != nil {
				return err
			}
			g, err := loadgen.New(loadgen.Config{Seed: *seed, Users: *users, Skew: *skew, Budgets: budgets, Spread: spread})
			if err != nil {
				return &usageError{err.Error()}
			}

			if err := checkFatal(ctx, opts); err != nil {
				return err
			}
			setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
			err = broker.EnsureTopicsOpts(setupCtx, opts, int32(*parts), nil, *topic)
			cancel()
			if err != nil {
				return fmt.Errorf("topic %s on %v: %w", *topic, *kf.brokers, err)
			}
			enc, err := loadgenEncoder(ctx, *format, *registryURL, *subject, *topic)
			if err != nil {
				return err
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			e.log.Info().Str("topic", *topic).Str("format", enc.Format()).Float64("rate", *rate).Dur("duration", *duration).
				Uint64("count", *count).Msg("producing")
			sum, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{
				Topic: *topic, Rate: *rate, Duration: *duration, Count: *count, Encoder: enc, FlushTimeout: *flushTimeout,
			})
			out, _ := json.Marshal(sum)
			fmt.Fprintln(e.stdout, string(out))
			return err
		}
	},
}

// loadgenEncoder returns the encoder of format, its schema registered as
// subject (default "<topic>-value") with the registry at url.
func loadgenEncoder(ctx context.Context, format, url, subject, topic string) (loadgen.Encoder, error) {
	if format == loadgen.FormatJSON {
		return loadgen.Encoder{}, nil
	}
	if subject == "" {
		subject = topic + "-value"
	}
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return loadgen.Encoder{}, badFlag("registry", "%v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	return loadgen.Register(rctx, cl, subject, format)
}
