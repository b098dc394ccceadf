package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/stats"
)

var statusCmd = &command{
	name:    "status",
	summary: "print budgets' progress and experiments' variant counts and SRM from the stats topic",
	doc: `Reads the compacted stats topic to its end and prints, per budget, what it
achieved in its current window or period against the ideal course, its pass
rate and the time left; per experiment, the cluster-wide variant counts, their
shares against the weights and the sample-ratio-mismatch p-value, marked
"` + clusterstatus.MismatchMark + `" below 0.001. It needs nothing but the stats topic: the workers
publish their budget and experiment definitions there.

--budget NAME (repeatable) shows only the budgets of those names, or matching
those glob patterns ('*' any characters, '/' included; '?' one; [a-z] a
set): --budget 'campaign/0042*'. --top N shows the N budgets of largest
|deviation| (of those --budget selects), largest first. Budgets are computed
and printed one at a time, so a stats topic of 100,000 budgets is read and
printed without holding its status; with --top only the N best are kept.

--json prints the same as one JSON document (version 1; docs/configuration.md,
"throttler status", describes its fields; with --budget or --top it adds
"query" and counts the matching budgets in "budgets_matched"). --cpuprofile
FILE writes a Go CPU profile of the command to FILE ('go tool pprof FILE'),
to find where a slow status spends its time. Exit status 0
when it printed, 1 when the topic cannot be read, 2 for a bad flag.`,
	setup: func(fs *flag.FlagSet) action {
		kf := addKafkaFlags(fs)
		topic := fs.String("stats-topic", "throttler.stats", "the stats `topic` (a config's topics.stats; default <group>.stats)")
		asJSON := fs.Bool("json", false, "print one JSON document instead of tables")
		timeout := fs.Duration("timeout", 30*time.Second, "give up reading the topic after this `duration`")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the command to `file`")
		var q clusterstatus.Query
		fs.Func("budget", "show the budget of this `name` or glob (repeatable)", func(s string) error {
			if s == "" {
				return errors.New("must not be empty")
			}
			q.Budgets = append(q.Budgets, s)
			return nil
		})
		fs.IntVar(&q.Top, "top", 0, "show the `N` budgets of largest |deviation| (0: all, by name)")
		return func(ctx context.Context, e *env) error {
			opts, err := kf.opts()
			if err != nil {
				return err
			}
			if *topic == "" {
				return badFlag("stats-topic", "must not be empty")
			}
			if *timeout <= 0 {
				return badFlag("timeout", "must be positive, got %v", *timeout)
			}
			if q.Top < 0 {
				return badFlag("top", "must be at least 0, got %d", q.Top)
			}
			if err := q.Check(); err != nil {
				return badFlag("budget", "%v", err)
			}
			if err := checkOutFile("cpuprofile", *cpuProfile); err != nil {
				return err
			}
			if *cpuProfile != "" {
				stop, err := startCPUProfile(*cpuProfile)
				if err != nil {
					return badFlag("cpuprofile", "%v", err)
				}
				defer stop()
			}
			view, err := openView(ctx, opts, *topic, *timeout)
			if err != nil {
				return err
			}
			defer view.Close()
			return clusterstatus.Stream(e.stdout, view, *topic, clock(), q, *asJSON)
		}
	},
}

// openView follows the stats topic and reads it to its end, giving up
// after timeout.
func openView(ctx context.Context, opts []kgo.Opt, topic string, timeout time.Duration) (*stats.View, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := checkFatal(ctx, opts); err != nil {
		return nil, err
	}
	view, err := stats.NewView(ctx, topic, opts)
	if errors.Is(err, stats.ErrTopicNotFound) {
		return nil, fmt.Errorf("stats topic %q not found (is --stats-topic the topics.stats of the workers' config?)", topic)
	}
	if err != nil {
		return nil, err
	}
	if err := view.WaitCaughtUp(ctx); err != nil {
		view.Close()
		return nil, fmt.Errorf("reading stats topic %q to its end: %w", topic, err)
	}
	return view, nil
}
