package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/throttler/throttler/internal/tools/scale"
)

var scaleCmd = &command{
	name:    "scale",
	summary: "measure what coordination costs as budgets grow: one row per budget count",
	doc: `Runs, for each count of --budgets, an embedded broker ('throttler broker' as a
process, with a data directory, compacting nothing during the run), an input
topic of --partitions partitions, --workers 'throttler run' processes of one
group (exactly-once unless --delivery), and the load generator at --rate
events a second (~100-byte JSON) for --duration. Of the B budgets, --paced are
window budgets taking --paced-share of the events and paced to pass half of
them over the run; the others are light period budgets over Zipf traffic
(exponent --skew), in a budgets_file, or imported through the control topic
with --via-control. --churn-rate N adds, changes and deletes N budgets a
second through the control topic during the middle third of the load.

Per row it reports: the budgets that saw an event (named by a delivered
record's throttler-budget header); the coordination written (stats, caps
and control topics: records and key+value bytes, aborted records
included) against the input; the largest record; transactions aborted in the steady
state (the last two thirds of the load); the workers' CPU (a fraction of one
core, summed) and each one's peak RSS; each worker's time from its start to
its first delivered record; lost and duplicated ids (read_committed); the
paced budgets' deviation from their targets; the longest gap between two
deliveries of an input partition (in the steady state, and while budgets
change); and the time of 'throttler status --top 10'. docs/scale.md
describes each figure.

Before the rows, --yardstick N runs 'throttler bench' over N records (kfake
in a process of its own, exactly-once, one budget, median of 3 rounds) and
prints the passthrough's and the pipeline's records/s under the table: the
machine's speed, so that figures of two machines can be compared (0: skip).

Prints a table on stdout, one line a row, and with --json FILE writes the
report as JSON (version 1) to FILE ('-': stdout, the table then going to
stderr). A row whose workers deliver nothing says so: every wait has a
timeout, a worker over --max-rss is killed. Each row needs about --duration
plus a minute or two.`,
	setup: func(fs *flag.FlagSet) action {
		c := scale.Config{Skew: scale.DefaultSkew}
		budgets := fs.String("budgets", "1000,10000,100000", "comma-separated budget `counts`, one row each")
		parts := fs.Int("partitions", scale.DefaultPartitions, "input `partitions`")
		fs.IntVar(&c.Workers, "workers", scale.DefaultWorkers, "worker `processes`")
		fs.Float64Var(&c.Rate, "rate", scale.DefaultRate, "events per `second`")
		fs.DurationVar(&c.Duration, "duration", scale.DefaultDuration, "`duration` of the load, per row")
		fs.IntVar(&c.Paced, "paced", scale.DefaultPaced, "paced window `budgets`")
		fs.Float64Var(&c.PacedShare, "paced-share", scale.DefaultPacedShare, "the paced budgets' `share` of the events")
		fs.Float64Var(&c.Skew, "skew", scale.DefaultSkew, "Zipf `exponent` of the light budgets (above 1; 0: uniform)")
		fs.IntVar(&c.Users, "users", scale.DefaultUsers, "distinct `users` (record keys)")
		fs.StringVar(&c.Delivery, "delivery", "exactly-once", "exactly-once or at-least-once")
		fs.BoolVar(&c.ViaControl, "via-control", false, "import the light budgets through the control topic instead of a budgets_file")
		fs.Float64Var(&c.ChurnRate, "churn-rate", 0, "budget changes per `second` during the middle third (0: none)")
		fs.DurationVar(&c.FirstDelivery, "first-delivery-timeout", 60e9, "a row with no delivered record by then says \"nothing delivered\"")
		fs.DurationVar(&c.Drain, "drain-timeout", 60e9, "how long to wait, after the load, for the workers to commit every input record")
		maxRSS := fs.Int64("max-rss", scale.DefaultMaxRSS>>20, "kill a worker whose RSS passes this many `MiB`")
		fs.StringVar(&c.Dir, "dir", "", "`directory` of the brokers' data, configs and logs (default: a temporary one, removed)")
		fs.BoolVar(&c.Keep, "keep", false, "keep the temporary directory")
		fs.StringVar(&c.ProfileDir, "cpuprofile-dir", "", "write a CPU profile of each worker to `directory`/budgets-B-worker-N.prof (created if missing)")
		fs.IntVar(&c.Yardstick, "yardstick", scale.DefaultYardstick, "before the rows, run throttler bench over this many `records`: the machine's speed beside the figures (0: none)")
		jsonOut := fs.String("json", "", "write the JSON report to `file` ('-': stdout)")
		return func(ctx context.Context, e *env) error {
			for _, s := range strings.Split(*budgets, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 1 {
					return badFlag("budgets", "want comma-separated counts, got %q", *budgets)
				}
				c.Budgets = append(c.Budgets, n)
			}
			if *parts < 1 || *parts > 1<<20 {
				return badFlag("partitions", "must be at least 1, got %d", *parts)
			}
			if *maxRSS < 1 {
				return badFlag("max-rss", "must be positive, got %d", *maxRSS)
			}
			if c.ProfileDir != "" {
				if st, err := os.Stat(c.ProfileDir); err == nil && !st.IsDir() {
					return badFlag("cpuprofile-dir", "%s is not a directory", c.ProfileDir)
				}
				if err := os.MkdirAll(c.ProfileDir, 0o755); err != nil {
					return badFlag("cpuprofile-dir", "%v", err)
				}
			}
			c.Partitions, c.MaxRSS, c.Log = int32(*parts), *maxRSS<<20, e.log
			table := e.stdout
			if *jsonOut == "-" {
				table = e.stderr
			}
			rep, err := scale.Run(ctx, c, func(r scale.Row) {
				e.log.Info().Int("budgets", r.Budgets).Float64("bytes_ratio", r.BytesRatio).Strs("notes", r.Notes).Msg("row done")
			})
			if errors.Is(err, scale.ErrConfig) {
				return &usageError{err.Error()}
			}
			if len(rep.Rows) == 0 {
				return err
			}
			if werr := scale.WriteTable(table, rep.Rows); werr != nil && err == nil {
				err = werr
			}
			if werr := scale.WriteYardstick(table, rep.Yardstick); werr != nil && err == nil {
				err = werr
			}
			if *jsonOut != "" {
				if jerr := writeJSON(*jsonOut, e, rep); jerr != nil && err == nil {
					err = jerr
				}
			}
			return err
		}
	},
}

// writeJSON writes v, indented, to path, or to stdout for "-".
func writeJSON(path string, e *env, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	if path == "-" {
		_, err = e.stdout.Write(out)
		return err
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
