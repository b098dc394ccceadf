package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/internal/tools/demo"
)

var demoCmd = &command{
	name:    "demo",
	summary: "run everything in one process for a minute and show the budgets being met",
	doc: `Needs no setup: starts an embedded Kafka broker on a temporary data dir
(removed at the end), a load generator (--rate events per second over
10,000 users, Zipf), three workers of one consumer group (exactly-once,
12-partition input topic) and a reward simulator that clicks 20% of the
passed events one second after they pass. The budgets, whose windows begin
a few seconds after the start and last --duration:

  spring-sale  passes about 1/4 of its traffic, paced evenly
  premium      scored: the highest scores pass first, about 1/10
  clicks-goal  a reward budget: a target of clicks
  brand        a parent over brand-a and brand-b

and a layer with a 50% experiment whose variants "control" and
"treatment" go to topics of their own.

It serves the web dashboard (see throttler dashboard) on --dashboard and prints
its URL; it closes with the demo. Every two seconds it prints each budget's
cluster-wide progress (from the stats topic) against its ideal curve, redrawn
in place in a terminal, as plain successive tables otherwise. At the end it stops the load, lets
the workers commit, counts what is really in the output topics and prints
a summary; --report and --chart write it as JSON and as an SVG chart.

With --format avro (or protobuf) the events are Avro (Protobuf) in the
schema registry wire format, their schema in a registry the demo runs in
the process (the workers fetch it from there); the clicks too.`,
	setup: func(fs *flag.FlagSet) action {
		duration := fs.Duration("duration", demo.DefaultDuration, "length of the budgets' window")
		rate := fs.Float64("rate", demo.DefaultRate, "load in events per `second`")
		report := fs.String("report", "", "write the JSON report to `file`")
		chart := fs.String("chart", "", "write an SVG chart of achieved against ideal to `file`")
		dash := fs.String("dashboard", "127.0.0.1:0", "serve the web dashboard on this `address` while the demo runs (port 0: a free one; \"\": none)")
		format := fs.String("format", "json", "`format` of the events: json, avro or protobuf")
		return func(ctx context.Context, e *env) error {
			if *duration < time.Second {
				return badFlag("duration", "must be at least 1s, got %v", *duration)
			}
			if !(*rate > 0) || *rate > 1e6 {
				return badFlag("rate", "must be above 0 and at most 1e6, got %v", *rate)
			}
			if *dash != "" {
				if _, _, err := net.SplitHostPort(*dash); err != nil {
					return badFlag("dashboard", "%v", err)
				}
			}
			if *format != "json" && *format != "avro" && *format != "protobuf" {
				return badFlag("format", "want json, avro or protobuf, got %q", *format)
			}
			if err := checkOutFile("report", *report); err != nil {
				return err
			}
			if err := checkOutFile("chart", *chart); err != nil {
				return err
			}
			// The workers' and broker's logs are noise under the table:
			// warnings only, unless --log-level asks for more.
			log := e.log
			levelSet := false
			fs.Visit(func(f *flag.Flag) { levelSet = levelSet || f.Name == "log-level" })
			if !levelSet {
				log = log.Level(zerolog.WarnLevel)
			}
			fmt.Fprintf(e.stdout, "throttler demo: %v window at %.0f events/s; starting a broker, 3 workers, the load and the clicks...\n\n", *duration, *rate)
			res, err := demo.Run(ctx, demo.Config{
				Duration:  *duration,
				Rate:      *rate,
				Progress:  e.stdout,
				Redraw:    isTerminal(e.stdout),
				Dashboard: *dash,
				Log:       log,
				Format:    *format,
			})
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted: %w", err)
				}
				return err
			}
			fmt.Fprintln(e.stdout)
			if err := res.WriteSummary(e.stdout); err != nil {
				return err
			}
			if err := writeFile(*report, res.WriteJSON); err != nil {
				return err
			}
			if err := writeFile(*chart, res.WriteSVG); err != nil {
				return err
			}
			for _, f := range []struct{ what, path string }{{"report", *report}, {"chart", *chart}} {
				if f.path != "" {
					fmt.Fprintf(e.stdout, "%s written to %s\n", f.what, f.path)
				}
			}
			return nil
		}
	},
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
