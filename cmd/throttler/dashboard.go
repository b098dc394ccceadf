package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/httpguard"
	"github.com/throttler/throttler/internal/tools/dashboard"
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
starts.

It listens on 127.0.0.1:8080 by default (loopback only). To serve others,
listen on another address and see docs/operations.md (HTTP endpoints):
--http-tls-cert and --http-tls-key serve HTTPS, --http-auth-token-file (or
--http-auth-token-env) and --http-user with --http-password-file (or
--http-password-env) require credentials, and --allowed-host names the host names the dashboard is
reached by (a request naming another is refused, against DNS rebinding;
IP addresses and localhost always work). At most 64 pages follow it live
at once (event streams).

Exit status 0 after an interrupt, 1 when the topic cannot be read or the
address not listened on, 2 for a bad flag.`,
	setup: func(fs *flag.FlagSet) action {
		kf := addKafkaFlags(fs)
		topic := fs.String("stats-topic", "throttler.stats", "the stats `topic` (a config's topics.stats; default <group>.stats)")
		listen := fs.String("listen", "127.0.0.1:8080", "serve the dashboard on this `address` (\":8080\" for every interface)")
		sample := fs.Duration("sample", dashboard.DefaultSampleEvery, "sample the stats topic every `duration` (the curves' resolution)")
		staleAfter := fs.Duration("stale-after", dashboard.DefaultStaleAfter, "show a budget as stale when its oldest report is older than this `duration`")
		timeout := fs.Duration("timeout", 30*time.Second, "give up reading the topic to its end after this `duration`")
		var hc config.HTTP
		fs.StringVar(&hc.TLS.CertFile, "http-tls-cert", "", "serve HTTPS with this PEM certificate `file` (with --http-tls-key)")
		fs.StringVar(&hc.TLS.KeyFile, "http-tls-key", "", "PEM private key `file` of --http-tls-cert")
		fs.StringVar(&hc.Auth.User, "http-user", "", "require HTTP basic authentication as this `user` (with --http-password-file or --http-password-env)")
		fs.StringVar(&hc.Auth.PasswordFile, "http-password-file", "", "`file` holding the password of --http-user")
		fs.StringVar(&hc.Auth.PasswordEnv, "http-password-env", "", "environment `variable` holding the password of --http-user")
		fs.StringVar(&hc.Auth.TokenFile, "http-auth-token-file", "", "require a bearer token, read from this `file`")
		fs.StringVar(&hc.Auth.TokenEnv, "http-auth-token-env", "", "require a bearer token, read from this environment `variable`")
		fs.Func("allowed-host", "a host `name` the dashboard is reached by, besides IP addresses and localhost (repeatable)", func(s string) error {
			hc.AllowedHosts = append(hc.AllowedHosts, s)
			return nil
		})
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
			guard, err := httpGuard(hc, *listen)
			if err != nil {
				return err
			}
			for _, path := range []string{hc.TLS.KeyFile, hc.Auth.PasswordFile, hc.Auth.TokenFile} {
				if w := config.SecretFileWarning(path); w != "" {
					e.log.Warn().Msg(w)
				}
			}
			view, err := openView(ctx, opts, *topic, *timeout)
			if err != nil {
				return err
			}
			defer view.Close()
			ln, err := httpguard.Listen(*listen, guard)
			if err != nil {
				return err
			}
			srv := dashboard.New(view, dashboard.Clock(clock), dashboard.Topic(*topic), dashboard.SampleEvery(*sample), dashboard.StaleAfter(*staleAfter),
				dashboard.Guard(guard))
			scheme := "http"
			if guard.CertFile != "" {
				scheme = "https"
			}
			fmt.Fprintf(e.stdout, "throttler dashboard: %s://%s/ (stats topic %s; Ctrl-C stops)\n", scheme, ln.Addr(), *topic)
			return srv.Serve(ctx, ln)
		}
	},
}

// httpGuard checks the dashboard's HTTP flags (as a config's http
// section, listen included) and returns the server's guard options.
func httpGuard(hc config.HTTP, listen string) (httpguard.Options, error) {
	hc.Listen = listen
	flagOf := map[string]string{
		"http.tls": "http-tls-cert", "http.tls.cert_file": "http-tls-cert", "http.tls.key_file": "http-tls-key",
		"http.auth": "http-auth-token-file", "http.auth.user": "http-user", "http.auth.password_file": "http-password-file",
		"http.auth.password_env": "http-password-env", "http.auth.token_file": "http-auth-token-file", "http.auth.token_env": "http-auth-token-env",
	}
	if p := config.CheckHTTP(hc); p != nil {
		name := flagOf[p.Path]
		if strings.HasPrefix(p.Path, "http.allowed_hosts") {
			name = "allowed-host"
		}
		if name == "" {
			name = "listen"
		}
		return httpguard.Options{}, badFlag(name, "%s", p.Reason)
	}
	o := httpguard.Options{AllowedHosts: hc.AllowedHosts, CertFile: hc.TLS.CertFile, KeyFile: hc.TLS.KeyFile}
	if hc.Auth.On() {
		password, token, _ := hc.Auth.Resolve() // checked above
		o.Auth = &httpguard.Auth{User: hc.Auth.User, Password: password, Token: token}
	}
	return o, nil
}
