package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throttler/throttler/internal/buildinfo"
)

const example = "../../config/testdata/example.yaml"

func TestVersion(t *testing.T) {
	bi := buildinfo.Get()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}, {"validate", "--version"}, {"run", "--version"}, {"budget", "set", "--version"}} {
		code, stdout, stderr := runCLI(t, context.Background(), args...)
		if code != 0 || stderr != "" || stdout != bi.String() || !strings.Contains(stdout, "go:          "+bi.GoVersion) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := runCLI(t, context.Background(), "version", "--json")
	var got buildinfo.Info
	if code != 0 || json.Unmarshal([]byte(stdout), &got) != nil || got != bi {
		t.Errorf("version --json: exit %d, %q", code, stdout)
	}
}

// TestFileArguments: a command that reads one file takes it as its
// argument or with its flag, flags before or after it.
func TestFileArguments(t *testing.T) {
	const scenario = "../../flow/sim/testdata/stable.yaml"
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"validate", example}, 0, "ok\n", ""},
		{[]string{"validate", "--config", example}, 0, "ok\n", ""},
		{[]string{"validate", example, "--log-level", "warn"}, 0, "ok\n", ""},
		{[]string{"validate", "--log-level", "warn", "--", example}, 0, "ok\n", ""},
		{[]string{"validate", example, example}, 2, "", `unexpected argument "` + example + `" (this command takes one file)`},
		{[]string{"validate", "--config", example, example}, 2, "", "unexpected argument"},
		{[]string{"validate"}, 2, "", "no file: give it as the first argument (or with --config)"},
		{[]string{"assign", example, "user-1", "--json"}, 0, `"key":"user-1"`, ""},
		{[]string{"assign", "--config", example, "user-1"}, 0, "user-1", ""},
		{[]string{"assign", example, "--", "-dash-key"}, 0, "-dash-key", ""},
		{[]string{"simulate", scenario}, 0, `"budgets"`, ""},
		{[]string{"simulate", "--scenario", scenario}, 0, `"budgets"`, ""},
	} {
		code, stdout, stderr := runCLI(t, context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) || tc.code == 0 && stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestFlagsSpelledWithTwoDashes: help, errors and the docs spell every
// flag --flag (the parser takes -flag too).
func TestFlagsSpelledWithTwoDashes(t *testing.T) {
	names := map[string]bool{}
	singleDash := regexp.MustCompile(`(^|[^\w-])-[a-z][\w-]*`)
	for _, c := range commands {
		c.flags().fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
		_, help, _ := runCLI(t, context.Background(), append(strings.Fields(c.name), "--help")...)
		for _, line := range strings.Split(help, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("%s --help: %q", c.name, line)
			}
		}
		_, _, stderr := runCLI(t, context.Background(), append(strings.Fields(c.name), "-no-such-flag")...)
		if !strings.Contains(stderr, "flag provided but not defined: --no-such-flag") {
			t.Errorf("%s -no-such-flag: %q", c.name, stderr)
		}
	}
	// A line that runs go (test, build, …) has go's own flags.
	goLine := regexp.MustCompile(`\bgo (test|build|vet|tool|run \S+\.go)\b|\bgo run\b.* -race\b`)
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, file := range append(docs, "../../README.md") {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		for i, line := range lines {
			// A go command may be wrapped after its "go".
			if goLine.MatchString(line) || i > 0 && goLine.MatchString(lastWord(lines[i-1])+" "+line) {
				continue
			}
			for _, m := range singleDash.FindAllString(line, -1) {
				name := m[strings.Index(m, "-")+1:]
				if names[name] {
					t.Errorf("%s:%d spells a flag %q: %s", filepath.Base(file), i+1, "-"+name, line)
				}
			}
		}
	}
}

// lastWord is the last space-separated word of line, without its
// leading backquote.
func lastWord(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimLeft(f[len(f)-1], "`")
}
