package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/tools/bench"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

var benchCmd = &command{
	name:    "bench",
	summary: "measure the pipeline against a passthrough, a decode reference and Kafka Streams",
	doc: `Runs --rounds rounds of each side, in turn, over the same --records
synthetic events, produced once: a raw franz-go consume→produce
passthrough; with --decode-reference the passthrough that decodes every
record with the pipeline's decoder; the full worker pipeline; with
--one-budget-reference the pipeline with one budget on an input of its own;
with --streams-reference a Kafka Streams application (kept in the source as
the bench's reference: it parses the JSON value with Jackson, sends it to a
passed or a rejected topic by its score and adds a header), built once with
Maven into the user's cache directory and run in one JVM for every round,
exactly_once_v2 (at_least_once with --delivery at-least-once), a commit
interval of 100 ms, a stream thread per core. Without Java or Maven the
Streams side is skipped, with the reason in the log and in
"streams_skipped". Round i starts at side i, so that every side runs after
every other; the Streams JVM first makes --streams-warmup unmeasured passes
over the input (its rate still rose over the first several: the JIT
compiles its hot code, the heap grows).

The broker: without --brokers an embedded one (kfake, with a temporary data
directory) in the bench's own process, whose CPU then counts in the Go
sides' ("broker_in_process": true); with --brokers a broker in another
process (Apache Kafka: see docs/bench.md; or 'throttler broker'), plaintext,
on which the run creates its topics under a prefix of its own and deletes
them at the end: the CPU figures are then the worker side's alone.

The Go sides share the client settings, delivery mode and commit cadence;
each side's round has a fresh consumer group and fresh output topics. A
round's rate counts the records committed after the group's first commit,
over the time to the last one; its CPU ("cpu_s_per_million": seconds of CPU
per million records) is the side's process's (the bench's for the Go sides,
the JVM's for Streams) between the same two instants.

With --format avro or protobuf the events are in that format, framed for
a schema registry run in the process (the worker fetches the schema once);
the Streams reference reads JSON only.

The pipeline decodes budget=campaign, key=user, id=id, time=ts, and paces
--budgets window budgets to pass about half of their events each (lag made
up over the whole window, and a sync interval of --sync-interval, 100ms by
default, a tenth of the worker's, so that it settles within the run); no
experiments. The work per sync grows with the active budgets and lanes idle
for three sync intervals close: with many budgets, --sync-interval 1s
measures the pipeline at the worker's default. With --budgets 1 (the
default) every event names budget "a"; with N > 1 the events name budgets
b-0 … b-(N-1), drawn by rank with Zipf exponent --budget-skew (rank 0 the
most frequent; default 1.1), or uniformly with --budget-skew 0, and each
budget's target is half of its share.

Rejected events go to a rejected topic: the pipeline, like the passthrough,
produces a record for every input record, which is the fair comparison and
the default. --drop-rejected drops and counts them instead (the pipeline then
produces about half of the records).

Prints one JSON object on stdout: medians of the rounds, "pipeline_rps",
"passthrough_rps", "ratio" (pipeline over passthrough), their
"*_cpu_s_per_million"; with the references "decode_rps", "decode_ratio"
(over the passthrough), "pipeline_decode_ratio"; "one_budget_rps",
"budgets_ratio" (pipeline over one budget); "streams_rps",
"streams_cpu_s_per_million", "streams_ratio" (pipeline over Streams),
"streams_cpu_ratio" (pipeline's CPU over Streams'); and "records",
"delivery", "format", "rejected_topic", "budgets", "budget_skew",
"sync_interval", "broker", "broker_in_process", "load_average" (one minute,
at the start and the end). --json adds every round.`,
	setup: func(fs *flag.FlagSet) action {
		records := fs.Int("records", bench.DefaultRecords, "number of input `records`")
		delivery := fs.String("delivery", "exactly-once", "delivery `mode` of every side: exactly-once or at-least-once")
		rounds := fs.Int("rounds", bench.DefaultRounds, "`rounds` of each side")
		asJSON := fs.Bool("json", false, "print the full result (every round) as JSON")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the last pipeline round to `file`")
		ptProfile := fs.String("cpuprofile-passthrough", "", "write a CPU profile of the last passthrough round to `file`")
		format := fs.String("format", "json", "`format` of the events: json, avro or protobuf")
		drop := fs.Bool("drop-rejected", false, "drop rejected events instead of producing them to a rejected topic")
		budgets := fs.Int("budgets", 1, "`number` of budgets over the events")
		decodeRef := fs.Bool("decode-reference", false, "also run, each round, the passthrough that decodes every record with the pipeline's decoder")
		skew := fs.Float64("budget-skew", loadgen.DefaultSkew, "Zipf `exponent` (above 1) of the budgets' ranks with --budgets > 1; 0: uniform")
		brokers := listFlag(fs, "brokers", nil, "comma-separated `host:port` list of a broker in another process (default: an embedded one in this process)")
		oneRef := fs.Bool("one-budget-reference", false, "also run, each round, the pipeline with one budget on an input of its own")
		syncEvery := fs.Duration("sync-interval", bench.DefaultSyncInterval, "the pipeline's sync `interval` (the worker's default is 1s)")
		streamsRef := fs.Bool("streams-reference", false, "also run, each round, the Kafka Streams reference (Java 17 and Maven)")
		streamsWarm := fs.Int("streams-warmup", bench.DefaultStreamsWarmup, "unmeasured `passes` of the Kafka Streams reference over the input before the rounds")
		return func(ctx context.Context, e *env) error {
			c := bench.Config{Records: *records, Rounds: *rounds, Log: e.log, Format: *format, DropRejected: *drop, Budgets: *budgets,
				Skew: *skew, DecodeReference: *decodeRef, Brokers: *brokers, OneBudgetReference: *oneRef, StreamsReference: *streamsRef, SyncInterval: *syncEvery, StreamsWarmup: *streamsWarm}
			if _, err := decode.ParseFormat(*format); err != nil {
				return badFlag("format", "want json, avro or protobuf, got %q", *format)
			}
			if *budgets < 1 {
				return badFlag("budgets", "must be at least 1, got %d", *budgets)
			}
			if *skew != 0 && !(*skew > 1) || math.IsInf(*skew, 0) {
				return badFlag("budget-skew", "must be 0 (uniform) or a number above 1, got %v", *skew)
			}
			switch *delivery {
			case "exactly-once":
				c.Delivery = consumer.ExactlyOnce
			case "at-least-once":
				c.Delivery = consumer.AtLeastOnce
			default:
				return badFlag("delivery", "want exactly-once or at-least-once, got %q", *delivery)
			}
			if *records < 1 {
				return badFlag("records", "must be at least 1, got %d", *records)
			}
			if *rounds < 1 {
				return badFlag("rounds", "must be at least 1, got %d", *rounds)
			}
			if *syncEvery < time.Millisecond {
				return badFlag("sync-interval", "must be at least 1ms, got %v", *syncEvery)
			}
			if *streamsWarm < 0 {
				return badFlag("streams-warmup", "must be at least 0, got %d", *streamsWarm)
			}
			if *streamsWarm == 0 {
				c.StreamsWarmup = -1 // none
			}
			if *streamsRef && *format != "json" {
				return badFlag("streams-reference", "the Kafka Streams reference reads JSON only, not --format %s", *format)
			}
			for _, p := range []struct {
				flag, file string
				dst        *io.Writer
			}{{"cpuprofile", *cpuProfile, &c.CPUProfile}, {"cpuprofile-passthrough", *ptProfile, &c.PassthroughProfile}} {
				if err := checkOutFile(p.flag, p.file); err != nil {
					return err
				}
				if p.file != "" {
					f, err := os.Create(p.file)
					if err != nil {
						return badFlag(p.flag, "%v", err)
					}
					defer f.Close()
					*p.dst = f
				}
			}
			res, err := bench.Run(ctx, c)
			if err != nil {
				return err
			}
			if !*asJSON {
				res.Rounds = nil
			}
			out, err := json.Marshal(res)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, string(out))
			return nil
		}
	},
}
