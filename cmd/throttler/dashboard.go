package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/throttler/throttler/internal/dashboard"
)

var dashboardCmd = &command{
	name:    "dashboard",
	summary: "serve a live web dashboard of budgets, experiments and workers from the stats topic",
	doc: `Follows the compacted stats topic, as status does, and serves a web page that
updates live: per budget, achieved against the ideal course with a ±1% band,
the deviation over time, the pass rate, the time left, the reporting sources
and nesting (search and sort for 100,000 budgets; a page per budget with its
full curve); per experiment, variant shares against weights and the SRM
warning; per worker, its partitions, lag, aborted transactions and dead
letters. Everything is served by this binary (no CDN).

The JSON API behind the page (/api/v1/...) is for scripts too;
docs/dashboard.md describes it. The curves are sampled every --sample and kept
in memory (bounded: docs/dashboard.md), so they begin when the dashboard
starts. Exit status 0 after an interrupt, 1 when the topic cannot be read or
the address not listened on, 2 for a bad flag.`,
	setup: func(fs *flag.FlagSet) action {
		kf := addKafkaFlags(fs)
		topic := fs.String("stats-topic", "throttler.stats", "the stats `topic` (a config's topics.stats; default <group>.stats)")
		listen := fs.String("listen", "127.0.0.1:8080", "serve the dashboard on this `address` (\":8080\" for every interface)")
		sample := fs.Duration("sample", dashboard.DefaultSampleEvery, "sample the stats topic every `duration` (the curves' resolution)")
		staleAfter := fs.Duration("stale-after", dashboard.DefaultStaleAfter, "show a budget as stale when its oldest report is older than this `duration`")
		timeout := fs.Duration("timeout", 30*time.Second, "give up reading the topic to its end after this `duration`")
		return func(ctx context.Context, e *env) error {
			opts, err := kf.opts()
			if err != nil {
				return err
			}
			switch {
			case *topic == "":
				return badFlag("stats-topic", "must not be empty")
			case *sample < 100*time.Millisecond:
				return badFlag("sample", "must be at least 100ms, got %v", *sample)
			case *staleAfter <= 0:
				return badFlag("stale-after", "must be positive, got %v", *staleAfter)
			case *timeout <= 0:
				return badFlag("timeout", "must be positive, got %v", *timeout)
			}
			if _, _, err := net.SplitHostPort(*listen); err != nil {
				return badFlag("listen", "%v", err)
			}
			view, err := openView(ctx, opts, *topic, *timeout)
			if err != nil {
				return err
			}
			defer view.Close()
			ln, err := net.Listen("tcp", *listen)
			if err != nil {
				return err
			}
			srv := dashboard.New(view, dashboard.Clock(clock), dashboard.Topic(*topic), dashboard.SampleEvery(*sample), dashboard.StaleAfter(*staleAfter))
			fmt.Fprintf(e.stdout, "throttler dashboard: http://%s/ (stats topic %s; Ctrl-C stops)\n", ln.Addr(), *topic)
			return srv.Serve(ctx, ln)
		}
	},
}
