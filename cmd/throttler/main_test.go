package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs a command line in-process and returns its exit code and
// outputs.
func runCLI(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDispatchUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("brokers: [nohost]\ncolour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../config/testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(t.TempDir(), "legacy.yaml")
	if err := os.WriteFile(legacy, []byte(strings.Replace(string(example), "topics:\n", "topics:\n  checkpoints: old.checkpoints\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args       []string
		code       int
		stdout     string // a part of stdout, or ""
		stderr     string // a part of stderr, or ""
		noStdout   bool
		stderrNone bool
	}{
		{args: nil, code: 2, stderr: "Usage:"},
		{args: []string{"nope"}, code: 2, stderr: `unknown command "nope"`, noStdout: true},
		{args: []string{"-x"}, code: 2, stderr: `unknown command "-x"`},
		{args: []string{"help"}, code: 0, stdout: "loadgen", stderrNone: true},
		{args: []string{"--help"}, code: 0, stdout: "validate", stderrNone: true},
		{args: []string{"help", "loadgen"}, code: 0, stdout: "--budgets", stderrNone: true},
		{args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		{args: []string{"help", "a", "b"}, code: 2, stderr: "at most one"},
		{args: []string{"loadgen", "-h"}, code: 0, stdout: "Usage: throttler loadgen", stderrNone: true},
		{args: []string{"broker", "--help"}, code: 0, stdout: "--data-dir", stderrNone: true},
		{args: []string{"loadgen", "--bogus"}, code: 2, stderr: "-bogus", noStdout: true},
		{args: []string{"loadgen", "--budgets", "a", "--rate", "fast"}, code: 2, stderr: "--rate"},
		{args: []string{"loadgen", "--budgets", "a", "--rate", "-1"}, code: 2, stderr: "flag --rate"},
		{args: []string{"loadgen", "--budgets", "a", "--rate", "NaN"}, code: 2, stderr: "flag --rate"},
		{args: []string{"loadgen"}, code: 2, stderr: "--budgets is required"},
		{args: []string{"loadgen", "--budgets", "a:x"}, code: 2, stderr: "flag --budgets"},
		{args: []string{"loadgen", "--budgets", "a", "--users", "0"}, code: 2, stderr: "flag --users"},
		{args: []string{"loadgen", "--budgets", "a", "--skew", "1"}, code: 2, stderr: "flag --skew"},
		{args: []string{"loadgen", "--budgets", "a", "--duration", "-1s"}, code: 2, stderr: "flag --duration"},
		{args: []string{"loadgen", "--budgets", "a", "--duration", "soon"}, code: 2, stderr: "flag --duration"},
		{args: []string{"loadgen", "--budgets", "a", "--partitions", "0"}, code: 2, stderr: "flag --partitions"},
		{args: []string{"loadgen", "--budgets", "a", "--brokers", "a:1,,b:2"}, code: 2, stderr: "flag --brokers"},
		{args: []string{"loadgen", "--budgets", "a", "--topic", ""}, code: 2, stderr: "flag --topic"},
		{args: []string{"loadgen", "--budgets", "a", "--count", "-5"}, code: 2, stderr: "--count"},
		{args: []string{"broker", "--partitions", "0"}, code: 2, stderr: "flag --partitions"},
		{args: []string{"broker", "--addr", "nope"}, code: 2, stderr: "flag --addr"},
		{args: []string{"broker", "--compaction-interval", "-1s"}, code: 2, stderr: "flag --compaction-interval"},
		{args: []string{"broker", "--log-level", "loud"}, code: 2, stderr: "flag --log-level"},
		{args: []string{"broker", "--log-format", "xml"}, code: 2, stderr: "flag --log-format"},
		{args: []string{"broker", "stray"}, code: 2, stderr: `unexpected argument "stray"`},
		{args: []string{"validate"}, code: 2, stderr: "no file: give it as the first argument (or with --config)"},
		{args: []string{"validate", "--config", "../../config/testdata/example.yaml"}, code: 0, stdout: "ok\n", stderrNone: true},
		{args: []string{"validate", "--config", bad}, code: 1, stdout: "colour: unknown field (line 2)", stderrNone: true},
		{args: []string{"validate", "--config", legacy}, code: 1, stdout: "topics.checkpoints: removed: the checkpoint topic is no longer read", stderrNone: true},
		{args: []string{"validate", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, code: 1, stderr: "no such file"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, context.Background(), tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, tc.stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
			if tc.noStdout && stdout != "" {
				t.Errorf("unexpected stdout %q", stdout)
			}
			if tc.stderrNone && stderr != "" {
				t.Errorf("unexpected stderr %q", stderr)
			}
		})
	}
}

func TestValidatePrintsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	cfg := "brokers: [nohost]\ntopics: {input: [in], output: in}\nfields: {budget: b}\nbudgets: [{name: a, target: -1, period: 1m}]\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCLI(t, context.Background(), "validate", "--config", path)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 1 || len(lines) != 3 {
		t.Fatalf("exit %d, %d lines:\n%s", code, len(lines), stdout)
	}
	for i, prefix := range []string{"brokers[0]: ", "topics.output: ", "budgets[0].target: "} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], prefix)
		}
	}
}

// TestCommandTable checks every command of the table, including those
// added later: unique names, help text, and -h that works.
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{"help": true}
	for _, c := range commands {
		if c.name == "" || seen[c.name] || strings.HasPrefix(c.name, "-") {
			t.Errorf("bad or duplicate command name %q", c.name)
		}
		seen[c.name] = true
		if c.summary == "" || c.doc == "" || c.setup == nil {
			t.Errorf("command %q lacks a summary, doc or setup", c.name)
		}
		code, stdout, stderr := runCLI(t, context.Background(), c.name, "-h")
		if code != 0 || !strings.Contains(stdout, "Usage: throttler "+c.name) || stderr != "" {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", c.name, code, stdout, stderr)
		}
		if code, _, stderr := runCLI(t, context.Background(), c.name, "--no-such-flag"); code != 2 || !strings.Contains(stderr, "-no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q", c.name, code, stderr)
		}
	}
}
