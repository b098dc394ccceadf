package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionBash loads the bash script in bash and completes words
// as the shell would.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	code, script, stderr := runCLI(t, context.Background(), "completion", "bash")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "c.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"va"}, "validate"},
		{[]string{"in"}, "init"},
		{[]string{"run", "--con"}, "--config --connect-timeout"},
		{[]string{"validate", "wor"}, "worker.yaml"},
		{[]string{"run", "--config", "wor"}, "worker.yaml"},
		{[]string{"run", "--http", ""}, ""}, // a value, not a file
		{[]string{"init", "--re"}, "--records --registry"},
		{[]string{"budget", "s"}, "set"},
		{[]string{"ledger", "r"}, "repair"},
		{[]string{"ledger", "show", "--gr"}, "--group"},
		{[]string{"budget", "set", "--ta"}, "--target"},
		{[]string{"completion", ""}, "bash zsh fish"},
		{[]string{"help", "bu"}, "budget"},
		{[]string{"status", "--vers"}, "--version"},
	} {
		words := strings.Join(append([]string{"throttler"}, tc.words...), "' '")
		cmd := exec.Command(bash, "-c", "source "+file+"; COMP_WORDS=('"+words+"'); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _throttler; echo \"${COMPREPLY[*]}\"")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
			t.Errorf("%v: completed %q (%v), want %q", tc.words, got, err, tc.want)
		}
	}
}

// TestCompletionScriptsParse checks the zsh and fish scripts with their
// shells' syntax checks, where the shells are installed.
func TestCompletionScriptsParse(t *testing.T) {
	for _, tc := range []struct{ shell, check string }{{"zsh", "-n"}, {"fish", "--no-execute"}} {
		t.Run(tc.shell, func(t *testing.T) {
			sh, err := exec.LookPath(tc.shell)
			if err != nil {
				t.Skipf("no %s on this machine", tc.shell)
			}
			code, script, _ := runCLI(t, context.Background(), "completion", tc.shell)
			file := filepath.Join(t.TempDir(), "c")
			if code != 0 || os.WriteFile(file, []byte(script), 0o600) != nil {
				t.Fatalf("exit %d", code)
			}
			if out, err := exec.Command(sh, tc.check, file).CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", tc.shell, tc.check, err, out)
			}
		})
	}
	fish, err := exec.LookPath("fish")
	if err != nil {
		return
	}
	_, script, _ := runCLI(t, context.Background(), "completion", "fish")
	file := filepath.Join(t.TempDir(), "c.fish")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{"throttler run --con": "--config", "throttler budget set --na": "--name", "throttler completion ": "zsh"} {
		out, err := exec.Command(fish, "-c", "source "+file+"; complete -C'"+line+"'").CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("fish %q: %v %q, want %q", line, err, out, want)
		}
	}
}

func TestCompletionBadShell(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if code, stdout, stderr := runCLI(t, context.Background(), args...); code != 2 || stdout != "" || !strings.Contains(stderr, "bash, zsh or fish") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
