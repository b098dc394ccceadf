package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/tools/churn"
)

var budgetChurnCmd = &command{
	name:    "budget churn",
	summary: "add, change and delete budgets at a steady rate, as a load",
	doc: `Writes budget changes to the control topic at --rate per second for
--duration (or until SIGINT), to measure that the workers keep delivering
while budgets change. Changes cycle through an add (a new period budget
named --prefix and a number, 100 a minute), a change (a budget of --change,
a budgets file in the format of a config's budgets_file, its target scaled
by 0.5 to 2) and a delete (of the oldest budget this run added). Without
--change, changes are adds. The same --seed gives the same changes.

Prints {"adds","changes","deletes","seconds"} once every record is
acknowledged. 'throttler scale --churn-rate' runs it inside a scale run and
reports the longest pause in delivery while it runs.`,
	setup: func(fs *flag.FlagSet) action {
		cf := addControlFlags(fs)
		rate := fs.Float64("rate", 100, "changes per `second`")
		duration := fs.Duration("duration", time.Minute, "stop after this long (0: until interrupted)")
		change := fs.String("change", "", "budgets `file` (JSON lines) of the budgets whose targets to change")
		prefix := fs.String("prefix", churn.DefaultPrefix, "name `prefix` of the added budgets")
		seed := fs.Uint64("seed", 1, "random `seed`")
		return func(ctx context.Context, e *env) error {
			if !(*rate > 0) || math.IsInf(*rate, 0) {
				return badFlag("rate", "must be a positive number, got %v", *rate)
			}
			if *duration < 0 {
				return badFlag("duration", "must not be negative, got %v", *duration)
			}
			var budgets []config.Budget
			if *change != "" {
				var err error
				if budgets, _, err = readBudgetsFile(e, *change); err != nil {
					return err
				}
			}
			cl, topic, err := cf.open(ctx)
			if err != nil {
				return err
			}
			cl.Close()
			p, err := churn.NewPlanner(churn.Config{Topic: topic, Rate: *rate, Duration: *duration, Change: budgets, Prefix: *prefix, Seed: *seed})
			if err != nil {
				return &usageError{err.Error()}
			}
			opts, _ := cf.kf.opts()
			pcl, err := kgo.NewClient(append(opts, kgo.ProducerLinger(time.Millisecond))...)
			if err != nil {
				return err
			}
			defer pcl.Close()
			sum, err := churn.Run(ctx, pcl, p)
			out, _ := json.Marshal(sum)
			fmt.Fprintln(e.stdout, string(out))
			return err
		}
	},
}
