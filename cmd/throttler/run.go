package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/buildinfo"
	"github.com/throttler/throttler/internal/kafkacheck"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/logx"
	"github.com/throttler/throttler/internal/tools/broker"
)

// logNames bounds the budget names a log line lists.
const logNames = 10

// DefaultConnectTimeout bounds how long run tries to reach the brokers
// before it gives up.
const DefaultConnectTimeout = 30 * time.Second

var runCmd = &command{
	name:    "run",
	summary: "run one worker from a config file until interrupted",
	args:    "FILE",
	doc: `Loads and validates the config file FILE (or --config FILE; see 'throttler
validate'); when it has problems, prints every one of them, as "path:
reason (line N)", on stderr and exits 1 without starting anything.

Otherwise checks that the brokers answer (logging each failed attempt,
giving up after --connect-timeout; rejected SASL credentials or a TLS
mismatch end it at once, exit 1), creates the output, rejected,
dead-letter and variant topics that are missing (topics.partitions
partitions, or as many as the first input topic), then runs one worker of
the consumer group until SIGINT or SIGTERM. On the signal the worker
finishes the records in flight, commits, leaves the group and the command
exits 0.

--http overrides http.listen (default 127.0.0.1:9090, loopback only; ":0"
picks a free port; "0.0.0.0:9090" listens on every interface, then see
docs/operations.md, HTTP endpoints, for TLS, credentials and
http.allowed_hosts). The address the metrics and health server (/metrics,
/livez, /readyz) is bound to is logged at startup:
{"msg":"http listening","addr":"127.0.0.1:43211",...}. /metrics includes
throttler_build_info{version,revision,goversion} (see 'throttler version').
A secret file the config names (a key, a password, a token) that its group
or others can read gets a warning.
--log-format and --log-level, when given, override the config's log section.
--cpuprofile FILE writes a Go CPU profile of the whole run to FILE when
the worker stops ('go tool pprof FILE').`,
	setup: func(fs *flag.FlagSet) action {
		flagPath := fs.String("config", "", "config `file` (or give it as the argument)")
		httpAddr := fs.String("http", "", "`host:port` of the metrics and health server, overriding http.listen")
		connect := fs.Duration("connect-timeout", DefaultConnectTimeout, "give up when no broker answers within this `duration`")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the worker, from its start to its stop, to `file`")
		txnID := fs.String("transactional-id", "", "transactional `id` of this worker (exactly-once), unique among live workers; a restarted worker that reuses its id aborts the transaction its previous run left open (default: the group and a random suffix)")
		return func(ctx context.Context, e *env) error {
			path, err := oneFile("config", *flagPath, e.args)
			if err != nil {
				return err
			}
			if *httpAddr != "" {
				if _, _, err := net.SplitHostPort(*httpAddr); err != nil {
					return badFlag("http", "want host:port, got %q", *httpAddr)
				}
			}
			if *connect <= 0 {
				return badFlag("connect-timeout", "must be positive, got %v", *connect)
			}
			if err := checkOutFile("cpuprofile", *cpuProfile); err != nil {
				return err
			}
			var extra []consumer.Opt
			if *txnID != "" {
				if strings.TrimSpace(*txnID) != *txnID || len(*txnID) > 200 {
					return badFlag("transactional-id", "want at most 200 characters and no surrounding white space, got %q", *txnID)
				}
				extra = append(extra, consumer.TransactionalID(*txnID))
			}
			cfg, err := config.Load(path)
			if err == nil && *httpAddr != "" {
				cfg.HTTP.Listen = *httpAddr
				err = cfg.Validate()
			}
			var ps config.Problems
			switch {
			case errors.As(err, &ps):
				for _, p := range ps {
					fmt.Fprintf(e.stderr, "%s: %s\n", path, p.Error())
				}
				fmt.Fprintf(e.stderr, "throttler run: %s has %d problem(s); nothing was started\n", path, len(ps))
				return exitCode(exitFailure)
			case err != nil:
				return err // unreadable file
			}
			log, err := runLogger(fs, e, cfg)
			if err != nil {
				return err
			}
			for _, w := range cfg.SecretWarnings() {
				log.Warn().Msg(w)
			}
			if *cpuProfile != "" {
				stop, err := startCPUProfile(*cpuProfile)
				if err != nil {
					return badFlag("cpuprofile", "%v", err)
				}
				defer stop()
			}
			return runWorker(ctx, log, cfg, *connect, extra...)
		}
	},
}

// runLogger returns the command's logger: the config's log section, unless
// --log-format or --log-level was given.
func runLogger(fs *flag.FlagSet, e *env, cfg *config.Config) (zerolog.Logger, error) {
	format, level := cfg.Log.Format, cfg.Log.Level
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "log-format":
			format = f.Value.String()
		case "log-level":
			level = f.Value.String()
		}
	})
	log, err := logx.New(e.stderr, format, level)
	if err != nil {
		return log, err
	}
	return log.With().Str("cmd", "run").Logger(), nil
}

// runWorker reaches the brokers, creates the missing output topics and runs
// one worker until ctx ends.
func runWorker(ctx context.Context, log zerolog.Logger, cfg *config.Config, connect time.Duration, opts ...consumer.Opt) error {
	conn, err := kafkaconn.FromConfig(cfg)
	if err != nil {
		return fmt.Errorf("security.%w", err)
	}
	if err := waitBrokers(ctx, log, conn, cfg.Brokers, connect); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // interrupted while connecting
	}
	if err := ensureOutputTopics(ctx, cfg, conn, connect); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w, _, err := app.NewWorker(cfg, append([]consumer.Opt{consumer.WithLogger(log)}, opts...)...)
	if err != nil {
		return err
	}
	if err := w.Registerer().Register(buildinfo.Collector()); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if a := w.HTTPAddr(); a != nil {
		ev := log.Info().Str("addr", a.String())
		if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
			ev = ev.Str("url", fmt.Sprintf("http://127.0.0.1:%d", ta.Port))
		}
		ev.Msg("http listening")
	}
	// The config's budgets, at most logNames of them: a line, not a
	// megabyte, for a config of 100,000 budgets.
	names := make([]string, 0, min(logNames, len(cfg.Budgets)))
	for _, b := range cfg.Budgets[:min(logNames, len(cfg.Budgets))] {
		names = append(names, b.Name)
	}
	log.Info().Strs("brokers", cfg.Brokers).Str("group", cfg.Group).Strs("input", cfg.Topics.Input).
		Str("output", cfg.Topics.Output).Strs("budgets", names).Int("n_budgets", len(cfg.Budgets)).Msg("starting worker")
	// Building the worker held the config's budgets and their flow
	// definitions beside the tree made of them (a budgets_file of a
	// million budgets: ~550 MB live, ~380 MB once they are dropped). The
	// collector's goal is twice the heap live at its last cycle; a cycle
	// now, the worker built and the config no longer read, sets that goal
	// from what the worker keeps instead of from the transient, which
	// would let the heap, and the process's RSS, grow to twice the
	// transient before the next cycle. The cycle runs beside the start
	// (its marking takes seconds of CPU at a million budgets), not
	// before it.
	go runtime.GC()
	// The signal is logged when it comes, and in any case before the
	// command returns: the goroutine is waited for.
	ran, logged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logged)
		select {
		case <-ctx.Done():
		case <-ran:
			if ctx.Err() == nil {
				return // the worker ended on its own
			}
		}
		log.Info().Msg("signal received: finishing records in flight, committing and leaving the group")
	}()
	err = w.Run(ctx)
	close(ran)
	<-logged
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// waitBrokers pings the brokers (with the client options opts) until one
// answers, ctx ends (nil: the caller checks ctx) or timeout passes (an
// error naming the brokers and the last failure). Each failed attempt is
// logged, so that a wrong address never hangs silently. Rejected
// credentials and TLS failures end it at once (kafkacheck.Fatal).
func waitBrokers(ctx context.Context, log zerolog.Logger, opts []kgo.Opt, brokers []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		err := kafkacheck.Check(ctx, opts, min(5*time.Second, max(time.Until(deadline), time.Millisecond)))
		switch {
		case kafkacheck.Fatal(err):
			log.Error().Err(err).Strs("brokers", brokers).Msg("cannot connect to the brokers; check security in the config")
			return err
		case err == nil:
			if attempt > 1 {
				log.Info().Strs("brokers", brokers).Msg("brokers reachable")
			}
			return nil
		case ctx.Err() != nil:
			return nil
		case !time.Now().Before(deadline):
			log.Error().Err(err).Strs("brokers", brokers).Dur("waited", timeout).Msg("no broker answers; check brokers in the config")
			return fmt.Errorf("cannot reach brokers %v within %v: %w", brokers, timeout, err)
		}
		log.Warn().Err(err).Strs("brokers", brokers).Int("attempt", attempt).
			Time("give_up_at", deadline).Msg("cannot reach brokers; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Second*time.Duration(attempt), time.Until(deadline), 5*time.Second)):
		}
	}
}

// ensureOutputTopics checks that the input and reward topics exist and
// creates the topics the worker writes to (other than the stats, caps and
// control topics, which the worker creates) when they are missing.
func ensureOutputTopics(ctx context.Context, cfg *config.Config, opts []kgo.Opt, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	read := append(append([]string(nil), cfg.Topics.Input...), cfg.Topics.Rewards...)
	details, err := adm.ListTopics(ctx, read...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var missing []string
	for _, t := range read {
		if d, ok := details[t]; !ok || d.Err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("topics %v, which the worker reads, do not exist: create them first", missing)
	}
	var input int32
	if d, ok := details[cfg.Topics.Input[0]]; ok {
		input = int32(len(d.Partitions))
	}
	write := []string{cfg.Topics.Output, cfg.Topics.DeadLetter}
	if cfg.Topics.Rejected != "" {
		write = append(write, cfg.Topics.Rejected)
	}
	for _, l := range cfg.Layers {
		for _, x := range l.Experiments {
			for _, v := range x.Variants {
				write = append(write, v.Topic)
			}
		}
	}
	slices.Sort(write)
	return broker.CreateTopics(ctx, adm, cfg.Topics.PartitionsFor(input), nil, slices.Compact(write)...)
}
