package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/bench"
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

With -format avro or protobuf the events are in that format, framed for
a schema registry run in the process (the worker fetches the schema once).

The pipeline decodes budget=campaign, key=user, id=id, time=ts, and paces
one window budget to pass about half of the events (sync interval 100ms,
lag made up over the whole window, so that it settles within the run);
rejects are dropped and counted (no rejected topic), no experiments.

Prints {"records","pipeline_rps","passthrough_rps","ratio"} (medians of the
rounds; with -json also the delivery mode and every round) on stdout.`,
	setup: func(fs *flag.FlagSet) action {
		records := fs.Int("records", bench.DefaultRecords, "number of input `records`")
		delivery := fs.String("delivery", "exactly-once", "delivery `mode` of both sides: exactly-once or at-least-once")
		rounds := fs.Int("rounds", bench.DefaultRounds, "`rounds` of each side")
		asJSON := fs.Bool("json", false, "print the full result (every round) as JSON")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the last pipeline round to `file`")
		format := fs.String("format", "json", "`format` of the events: json, avro or protobuf")
		return func(ctx context.Context, e *env) error {
			c := bench.Config{Records: *records, Rounds: *rounds, Log: e.log, Format: *format}
			if _, err := decode.ParseFormat(*format); err != nil {
				return badFlag("format", "want json, avro or protobuf, got %q", *format)
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
			if err := checkOutFile("cpuprofile", *cpuProfile); err != nil {
				return err
			}
			if *cpuProfile != "" {
				f, err := os.Create(*cpuProfile)
				if err != nil {
					return badFlag("cpuprofile", "%v", err)
				}
				defer f.Close()
				c.CPUProfile = f
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
				}{res.Records, res.Format, res.PipelineRPS, res.PassthroughRPS, res.Ratio})
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, string(out))
			return nil
		}
	},
}
