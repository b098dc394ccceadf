package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/bench"
	"github.com/throttler/throttler/internal/loadgen"
)

var benchCmd = &command{
	name:    "bench",
	summary: "measure the pipeline against a raw consume→produce passthrough",
	doc: `Starts an embedded broker (kfake, with a temporary data directory) on a
free loopback port, produces -records synthetic events once, then runs, in
alternation, a raw franz-go consume→produce passthrough and the full worker
pipeline over them, -rounds times each, with a fresh consumer group and
fresh output topics per round. Both sides use the same client settings,
delivery mode and commit cadence; a round's rate counts the records
committed after the group's first commit, over the time to the last one.
With -brokers it runs on that cluster instead (topics and groups named
bench-<run id>-…, its topics deleted at the end).

With -format avro or protobuf the events are in that format, framed for
a schema registry run in the process (the worker fetches the schema once).

The pipeline decodes budget=campaign, key=user, id=id, time=ts, and paces
-budgets window budgets to pass about half of their events each (sync
interval 100ms, lag made up over the whole window, so that it settles within
the run); no experiments. With -budgets 1 (the default) every event names
budget "a"; with N > 1 the events name budgets b-0 … b-(N-1), drawn by rank
with Zipf exponent -budget-skew (rank 0 the most frequent; default 1.1), or
uniformly with -budget-skew 0, and each budget's target is half of its share.

Rejected events go to a rejected topic: the pipeline, like the passthrough,
produces a record for every input record, which is the fair comparison and
the default. -drop-rejected drops and counts them instead (the pipeline then
produces about half of the records: the comparison before this option).

With -decode-reference each round also runs, after the passthrough, the
passthrough that decodes every record with the pipeline's decoder (each
poll's records in parallel, one goroutine per processor) before it copies
it: what decoding alone costs, measured in the same run.

Prints {"records","pipeline_rps","passthrough_rps","ratio","rejected_topic",
"budgets","budget_skew"} (medians of the rounds; with -decode-reference also
"decode_rps" and "decode_ratio", the decode reference's rate and its
quotient by the passthrough's; with -json also the delivery mode and every
round, a pipeline round with "passed" and "produced", the fractions of the
records passed and produced) on stdout.`,
	setup: func(fs *flag.FlagSet) action {
		records := fs.Int("records", bench.DefaultRecords, "number of input `records`")
		delivery := fs.String("delivery", "exactly-once", "delivery `mode` of both sides: exactly-once or at-least-once")
		rounds := fs.Int("rounds", bench.DefaultRounds, "`rounds` of each side")
		asJSON := fs.Bool("json", false, "print the full result (every round) as JSON")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the last pipeline round to `file`")
		ptProfile := fs.String("cpuprofile-passthrough", "", "write a CPU profile of the last passthrough round to `file`")
		format := fs.String("format", "json", "`format` of the events: json, avro or protobuf")
		drop := fs.Bool("drop-rejected", false, "drop rejected events instead of producing them to a rejected topic")
		budgets := fs.Int("budgets", 1, "`number` of budgets over the events")
		decodeRef := fs.Bool("decode-reference", false, "also run, each round, the passthrough that decodes every record with the pipeline's decoder")
		skew := fs.Float64("budget-skew", loadgen.DefaultSkew, "Zipf `exponent` (above 1) of the budgets' ranks with -budgets > 1; 0: uniform")
		brokers := listFlag(fs, "brokers", nil, "comma-separated seed `brokers` (plaintext) of a cluster to run on instead of the embedded broker; the run's topics are deleted at the end")
		return func(ctx context.Context, e *env) error {
			c := bench.Config{Records: *records, Rounds: *rounds, Log: e.log, Format: *format, DropRejected: *drop, Budgets: *budgets, Skew: *skew, DecodeReference: *decodeRef,
				Brokers: *brokers}
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
			var out []byte
			if *asJSON {
				out, err = json.Marshal(res)
			} else {
				out, err = json.Marshal(struct {
					Records        int     `json:"records"`
					Format         string  `json:"format"`
					PipelineRPS    float64 `json:"pipeline_rps"`
					PassthroughRPS float64 `json:"passthrough_rps"`
					Ratio          float64 `json:"ratio"`
					RejectedTopic  bool    `json:"rejected_topic"`
					Budgets        int     `json:"budgets"`
					Skew           float64 `json:"budget_skew"`
					DecodeRPS      float64 `json:"decode_rps,omitempty"`
					DecodeRatio    float64 `json:"decode_ratio,omitempty"`
				}{res.Records, res.Format, res.PipelineRPS, res.PassthroughRPS, res.Ratio, res.RejectedTopic, res.Budgets, res.Skew, res.DecodeRPS, res.DecodeRatio})
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, string(out))
			return nil
		}
	},
}
