package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// trap is a TCP listener that counts the connections made to it: the
// broker address of commands that must not connect anywhere.
type trap struct {
	ln    net.Listener
	conns atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

// TestBadFlagsAndConfigsStartNothing runs every command with bad flags
// and (run, validate) bad config files: each exits non-zero with a message
// naming the flag or field and the reason, prints nothing on stdout, does
// not connect to the brokers it was given (a listener counts connections)
// and returns at once instead of starting (a demo, a broker or a worker
// would run until the context's deadline).
func TestBadFlagsAndConfigsStartNothing(t *testing.T) {
	tr := newTrap(t)
	brokers := tr.ln.Addr().String()
	dir := t.TempDir()
	missingDir := filepath.Join(dir, "no", "such", "dir")
	missing := filepath.Join(dir, "missing.pem")
	cfg := func(extra string) string {
		p := filepath.Join(t.TempDir(), "c.yaml")
		body := "brokers: [" + brokers + "]\ntopics: {input: [events], output: passed}\nfields: {budget: campaign, id: id}\nbudgets: [{name: a, target: 10, period: 1m}]\n" + extra
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("duration: 1s\nnodes: [{rate: 10}]\nbudgets: [{name: a, target: 5}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lg := func(args ...string) []string {
		return append([]string{"loadgen", "--brokers", brokers, "--budgets", "a", "--count", "1"}, args...)
	}
	st := func(args ...string) []string { return append([]string{"status", "--brokers", brokers}, args...) }
	cases := []badCase{
		// run
		{[]string{"run"}, 2, []string{"no file", "--config"}},
		{[]string{"run", cfg(""), cfg("")}, 2, []string{"unexpected argument", "takes one file"}},
		{[]string{"run", "--config", cfg(""), "--http", "nope"}, 2, []string{"flag --http", "want host:port"}},
		{[]string{"run", "--config", cfg(""), "--connect-timeout", "0s"}, 2, []string{"flag --connect-timeout", "must be positive"}},
		{[]string{"run", "--config", cfg(""), "--connect-timeout", "soon"}, 2, []string{"--connect-timeout"}},
		{[]string{"run", "--config", cfg(""), "--cpuprofile", filepath.Join(missingDir, "cpu")}, 2, []string{"flag --cpuprofile", "no such file"}},
		{[]string{"run", "--config", missing}, 1, []string{"missing.pem", "no such file"}},
		{[]string{"run", "--config", cfg("delivery: twice\n")}, 1, []string{"delivery: must be", `got "twice"`, "nothing was started"}},
		{[]string{"run", "--config", cfg("dedup_window: -1\n")}, 1, []string{"dedup_window: must be at least 0"}},
		{[]string{"run", "--config", cfg("sync_interval: fast\n")}, 1, []string{"sync_interval", "line 5"}},
		{[]string{"run", "--config", cfg("colour: red\n")}, 1, []string{"colour: unknown field"}},
		{[]string{"run", "--config", cfg("security: {sasl: {mechanism: KERBEROS, username: u, password: p}}\n")}, 1,
			[]string{"security.sasl.mechanism: must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", `got "KERBEROS"`}},
		{[]string{"run", "--config", cfg("security: {sasl: {mechanism: PLAIN, username: u}}\n")}, 1, []string{"security.sasl.password: is required"}},
		{[]string{"run", "--config", cfg("security: {tls: {ca_file: " + missing + "}}\n")}, 1, []string{"security.tls.ca_file: cannot read"}},
		{[]string{"run", "--config", cfg("security: {tls: {cert_file: " + missing + "}}\n")}, 1, []string{"security.tls.key_file: is required with tls.cert_file"}},
		// validate
		{[]string{"validate", "--config", cfg("security: {sasl: {username: u}}\n")}, 1, nil},
		// loadgen
		{lg("--sasl-mechanism", "KERBEROS", "--sasl-user", "u", "--sasl-password", "p"), 2, []string{"flag --sasl-mechanism", `got "KERBEROS"`}},
		{lg("--sasl-mechanism", "PLAIN", "--sasl-password", "p"), 2, []string{"flag --sasl-user", "must be set with --sasl-mechanism"}},
		{lg("--sasl-mechanism", "PLAIN", "--sasl-user", "u"), 2, []string{"flag --sasl-password", "must be set"}},
		{lg("--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password", "p", "--sasl-password-file", missing), 2, []string{"flag --sasl-password", "set one of"}},
		{lg("--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password-env", "THROTTLER_TEST_UNSET"), 2, []string{"flag --sasl-password-env", "THROTTLER_TEST_UNSET is not set"}},
		{lg("--sasl-user", "u"), 2, []string{"flag --sasl-user", "--sasl-mechanism is empty"}},
		{lg("--tls-ca", missing), 2, []string{"flag --tls-ca", "cannot read"}},
		{lg("--tls-cert", missing, "--tls-key", missing), 2, []string{"flag --tls-cert", "cannot read"}},
		{lg("--tls-key", "x"), 2, []string{"flag --tls-key", "cannot read"}},
		{lg("--tls", "--tls-insecure-skip-verify=maybe"), 2, []string{"--tls-insecure-skip-verify"}},
		{lg("--skew", "NaN"), 2, []string{"flag --skew"}},
		{lg("--format", "xml"), 2, []string{"flag --format", `got "xml"`}},
		{lg("--format", "avro"), 2, []string{"flag --registry", "is required with --format avro"}},
		{lg("--flush-timeout", "0s"), 2, []string{"flag --flush-timeout", "must be positive"}},
		// status
		{st("--sasl-mechanism", "scram-sha-1", "--sasl-user", "u", "--sasl-password", "p"), 2, []string{"flag --sasl-mechanism"}},
		{st("--tls-ca", missing), 2, []string{"flag --tls-ca", "cannot read"}},
		{st("--timeout", "-1s"), 2, []string{"flag --timeout", "must be positive"}},
		// budget
		{[]string{"budget", "set", "--brokers", brokers, "--name", "a", "--target", "10", "--period", "1m", "--sasl-mechanism", "PLAIN", "--sasl-user", "u"}, 2,
			[]string{"flag --sasl-password", "must be set"}},
		{[]string{"budget", "list", "--brokers", brokers, "--tls-ca", missing}, 2, []string{"flag --tls-ca", "cannot read"}},
		{[]string{"budget", "delete", "--brokers", brokers, "--name", "a", "--timeout", "0s"}, 2, []string{"flag --timeout", "must be positive"}},
		// broker
		{[]string{"broker", "--addr", "127.0.0.1:0", "--sasl-user", "alice"}, 2, []string{"--sasl-user", "want MECHANISM:USER:PASSWORD"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--sasl-user", "alice:s3cretPW"}, 2, []string{"--sasl-user", "want MECHANISM:USER:PASSWORD", "not shown"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--sasl-user", "GSSAPI:alice:pw"}, 2, []string{"--sasl-user", "mechanism must be one of"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--sasl-user", "PLAIN::pw"}, 2, []string{"--sasl-user", "want MECHANISM:USER:PASSWORD"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--tls-cert", "c.pem"}, 2, []string{"flag --tls-key", "must be set with --tls-cert"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--tls-key", "k.pem"}, 2, []string{"flag --tls-cert", "must be set with --tls-key"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--tls-cert", missing, "--tls-key", missing}, 2, []string{"flag --tls-", "cannot read", "no such file"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--seed-topics", "a,,b"}, 2, []string{"--seed-topics", "empty item"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--data-dir", scenario}, 2, []string{"flag --data-dir", "is not a directory"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(scenario, "sub")}, 2, []string{"flag --data-dir", "not a directory"}},
		{[]string{"broker", "--addr", "127.0.0.1:0", "--advertise", ":1"}, 2, []string{"advertised address", "no host"}},
		// demo: checked before the minute-long run
		{[]string{"demo", "--duration", "0s"}, 2, []string{"flag --duration", "at least 1s"}},
		{[]string{"demo", "--rate", "0"}, 2, []string{"flag --rate", "above 0"}},
		{[]string{"demo", "--report", filepath.Join(missingDir, "r.json")}, 2, []string{"flag --report", "no such file"}},
		{[]string{"demo", "--chart", dir}, 2, []string{"flag --chart", "is a directory"}},
		// simulate
		{[]string{"simulate"}, 2, []string{"no file", "--scenario"}},
		{[]string{"simulate", "--scenario", missing}, 1, []string{"missing.pem"}},
		{[]string{"simulate", "--scenario", scenario, "--timeline", filepath.Join(missingDir, "t.csv")}, 2, []string{"flag --timeline", "no such file"}},
		// bench
		{[]string{"bench", "--delivery", "twice"}, 2, []string{"flag --delivery", `got "twice"`}},
		{[]string{"bench", "--records", "0"}, 2, []string{"flag --records", "at least 1"}},
		{[]string{"bench", "--rounds", "0"}, 2, []string{"flag --rounds", "at least 1"}},
		{[]string{"bench", "--cpuprofile", filepath.Join(missingDir, "cpu")}, 2, []string{"flag --cpuprofile", "no such file"}},
		{[]string{"bench", "--streams-reference", "--format", "avro"}, 2, []string{"flag --streams-reference", "JSON only"}},
		{[]string{"bench", "--brokers", "a:1,,b:2"}, 2, []string{"--brokers", "empty item"}},
		{[]string{"bench", "--sync-interval", "0s"}, 2, []string{"flag --sync-interval", "at least 1ms"}},
		{[]string{"bench", "--streams-warmup", "-1"}, 2, []string{"flag --streams-warmup", "at least 0"}},
	}
	runBadCases(t, cases)
	if n := tr.conns.Load(); n != 0 {
		t.Errorf("%d connection(s) to the brokers: a command with bad flags or config reached out", n)
	}
}

// badCase is a command line that must fail at once: its exit code and the
// parts of stderr that say why.
type badCase struct {
	args []string
	code int
	want []string // parts of stderr: the flag or field, and the reason
}

// runBadCases runs each case, checking that it exits with its code at
// once, says why on stderr and prints nothing on stdout (but validate).
func runBadCases(t *testing.T, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:min(len(tc.args), 5)], " "), func(t *testing.T) {
			// A command that started would run until this deadline: the
			// test would then fail on its exit code and its duration.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			code, stdout, stderr := runCLI(t, ctx, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if ctx.Err() != nil {
				t.Errorf("ran until the deadline (%v): it started", time.Since(start))
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "s3cretPW") {
				t.Errorf("stderr echoes the password given on the command line:\n%s", stderr)
			}
			if tc.args[0] != "validate" && stdout != "" {
				t.Errorf("unexpected stdout %q", stdout)
			}
		})
	}
}

// TestBadFlagsBulk is TestBadFlagsAndConfigsStartNothing for the commands
// and flags of many budgets: loadgen's spread, status's selection, scale,
// budget import and budget churn.
func TestBadFlagsBulk(t *testing.T) {
	tr := newTrap(t)
	brokers := tr.ln.Addr().String()
	aFile := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	lg := func(args ...string) []string {
		return append([]string{"loadgen", "--brokers", brokers, "--budgets", "a", "--count", "1"}, args...)
	}
	st := func(args ...string) []string { return append([]string{"status", "--brokers", brokers}, args...) }
	runBadCases(t, []badCase{
		{lg("--spread", "-1"), 2, []string{"flag --spread", "at least 0"}},
		{lg("--spread", "10", "--spread-skew", "0.5"), 2, []string{"flag --spread-skew", "above 1"}},
		{lg("--spread", "10", "--spread-weight", "-2"), 2, []string{"flag --spread-weight", "positive"}},
		{st("--top", "-3"), 2, []string{"flag --top", "at least 0"}},
		{st("--budget", "[z-a]"), 2, []string{"flag --budget", "invalid"}},
		{st("--budget", ""), 2, []string{"--budget", "must not be empty"}},
		{[]string{"scale", "--budgets", "1000,x"}, 2, []string{"flag --budgets", "comma-separated counts"}},
		{[]string{"scale", "--partitions", "0"}, 2, []string{"flag --partitions", "at least 1"}},
		{[]string{"scale", "--budgets", "5"}, 2, []string{"fewer than the 10 paced"}},
		{[]string{"scale", "--cpuprofile-dir", aFile}, 2, []string{"flag --cpuprofile-dir", "is not a directory"}},
		{[]string{"scale", "--skew", "0.5"}, 2, []string{"skew must be 0 (uniform) or above 1"}},
		{[]string{"budget", "import", "--brokers", brokers}, 2, []string{"want one FILE argument"}},
		{[]string{"budget", "churn", "--brokers", brokers, "--rate", "0"}, 2, []string{"flag --rate", "positive"}},
	})
	if n := tr.conns.Load(); n != 0 {
		t.Errorf("%d connection(s) to the brokers: a command with bad flags reached out", n)
	}
}
