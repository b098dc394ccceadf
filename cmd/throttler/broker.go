package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/throttler/throttler/internal/tools/broker"
)

var brokerCmd = &command{
	name:    "broker",
	summary: "run the embedded Kafka broker (kfake) until interrupted: for demos and tests, not production",
	doc: `Runs kfake, a Kafka-protocol broker written in Go, as a standalone process
until SIGINT or SIGTERM. Prints the address clients should use (host:port,
with the real port when --addr asks for port 0) on one line of stdout once
the broker answers; logs go to stderr.

It is the embedded default for the demo, the tests and trying throttler out,
NOT a production broker: one node, no replication, no ACLs, and kfake
differs from Kafka in places (docs/kafka-notes.md). Run throttler against
Apache Kafka in production (docs/operations.md).

The data dir is made readable by this user only (mode 0700), and the files
the broker writes get mode 0600.

With --data-dir the broker keeps its topics, records, groups and
transactions on disk and reloads them on the next start; without it
everything stays in memory. Retention settings are applied every 5 s.

Compacted topics are compacted on SIGUSR1, or every --compaction-interval
when one is given (default never), and only at a moment when no
transaction is open on them. kfake's compaction can still hide the
records a transactional producer writes afterwards (it drops abort
markers it keeps in its index: docs/kafka-notes.md), so compact once the
exactly-once workers have stopped.

--sasl-user turns SASL on (clients must authenticate as one of the users
given); --tls-cert and --tls-key make the listener accept TLS only.

SIGUSR1 compacts the compacted topics as soon as none holds an open
transaction, and logs "compacted" (at info): 'throttler scale' does so
once its workers have stopped, before timing 'throttler status'.`,
	setup: func(fs *flag.FlagSet) action {
		addr := fs.String("addr", broker.DefaultAddr, "`host:port` to listen on; port 0 picks a free port")
		adv := fs.String("advertise", "", "`host[:port]` clients are told to connect to (default: the listening address, 127.0.0.1 for a wildcard host)")
		dir := fs.String("data-dir", "", "`directory` to persist the broker's state in (default: memory only)")
		parts := fs.Int("partitions", broker.DefaultPartitions, "partition `count` of seed topics and of topics created with the default count")
		seeds := listFlag(fs, "seed-topics", nil, "comma-separated `topics` to create on start if missing")
		var users saslUsersFlag
		fs.Var(&users, "sasl-user", "turn SASL on and accept `MECHANISM:USER:PASSWORD` (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512); repeat for more users")
		tlsCert := fs.String("tls-cert", "", "accept TLS connections only, with this PEM certificate `file` (with --tls-key)")
		tlsKey := fs.String("tls-key", "", "PEM private key `file` of --tls-cert")
		compaction := fs.Duration("compaction-interval", broker.DefaultCompactionInterval, "how often compacted topics are compacted, at a moment without open transactions (0: never, only on SIGUSR1)")
		return func(ctx context.Context, e *env) error {
			if users.err != nil {
				return users.err
			}
			host, _, err := net.SplitHostPort(*addr)
			if err != nil {
				return badFlag("addr", "want host:port, got %q", *addr)
			}
			if *parts < 1 || *parts > 1<<20 {
				return badFlag("partitions", "must be at least 1, got %d", *parts)
			}
			if *compaction != 0 && *compaction < time.Millisecond {
				return badFlag("compaction-interval", "must be 0 (never) or at least 1ms, got %v", *compaction)
			}
			if (*tlsCert == "") != (*tlsKey == "") {
				if *tlsCert == "" {
					return badFlag("tls-cert", "must be set with --tls-key")
				}
				return badFlag("tls-key", "must be set with --tls-cert")
			}
			if *dir != "" {
				if st, err := os.Stat(*dir); err == nil && !st.IsDir() {
					return badFlag("data-dir", "%s is not a directory", *dir)
				}
				if err := os.MkdirAll(*dir, 0o700); err != nil {
					return badFlag("data-dir", "%v", err)
				}
			}
			for name, path := range map[string]string{"tls-cert": *tlsCert, "tls-key": *tlsKey} {
				if _, err := os.ReadFile(path); path != "" && err != nil {
					return badFlag(name, "cannot read: %v", err)
				}
			}
			privateFiles() // the broker's files hold the deployment's events
			opts := []broker.Opt{
				broker.Addr(*addr),
				broker.Partitions(int32(*parts)),
				broker.SeedTopics(*seeds...),
				broker.CompactionInterval(*compaction),
				broker.Logger(e.log),
			}
			if *adv != "" {
				opts = append(opts, broker.Advertise(*adv))
			} else if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				e.log.Warn().Msg("listening on every interface but advertising 127.0.0.1: set --advertise for clients on other hosts")
			}
			if *dir != "" {
				opts = append(opts, broker.DataDir(*dir))
			}
			if len(users.users) > 0 {
				opts = append(opts, broker.Users(users.users...))
			}
			if *tlsCert != "" {
				opts = append(opts, broker.TLS(*tlsCert, *tlsKey))
			}
			b, err := broker.Start(ctx, opts...)
			if errors.Is(err, broker.ErrOptions) {
				return &usageError{err.Error()}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, b.Addr())
			compact := make(chan os.Signal, 1)
			signal.Notify(compact, syscall.SIGUSR1)
			defer signal.Stop(compact)
			for {
				select {
				case <-b.Done(): // until ctx (the signals) ends
					e.log.Info().Msg("broker stopped")
					return nil
				case <-compact:
					t0 := time.Now()
					if err := b.Compact(ctx); err != nil {
						e.log.Warn().Err(err).Msg("compaction")
						continue
					}
					e.log.Info().Dur("took", time.Since(t0)).Msg("compacted")
				}
			}
		}
	},
}
