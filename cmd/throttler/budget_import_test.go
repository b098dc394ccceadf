package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// budgetLines returns n budgets in JSON lines: ten accounts, each the
// parent of a tenth of the campaigns, written after their children.
func budgetLines(n int, target int) string {
	var b strings.Builder
	for i := range n - 10 {
		fmt.Fprintf(&b, `{"name":"campaign/%06d","target":%d,"begin":"2026-11-22T10:00:00Z","end":"2026-11-22T12:00:00Z","parent":"account/%d"}`+"\n", i, target, i%10)
	}
	for i := range 10 {
		fmt.Fprintf(&b, `{"name":"account/%d","target":100000,"period":"1h"}`+"\n", i)
	}
	return b.String()
}

func TestBudgetImport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startEventsBroker(ctx, t)
	dir := t.TempDir()
	file := filepath.Join(dir, "b.jsonl")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imp := func(extra ...string) importResult {
		t.Helper()
		args := append([]string{"budget", "import", "--brokers", b.Addr(), "--group", "bi", "--json"}, extra...)
		code, stdout, stderr := runCLI(t, ctx, append(args, file)...)
		if code != 0 {
			t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
		}
		var r importResult
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return r
	}
	write(budgetLines(1000, 50))
	if r := imp("--dry-run"); r.Read != 1000 || r.Written != 1000 || r.Added != 1000 || !r.DryRun {
		t.Fatalf("dry run %+v", r)
	}
	if r := imp(); r.Read != 1000 || r.Written != 1000 || r.Added != 1000 || r.Topic != "bi.changes" {
		t.Fatalf("first import %+v", r)
	}
	if r := imp(); r.Written != 0 || r.Unchanged != 1000 {
		t.Fatalf("same file again %+v", r)
	}
	write(strings.Replace(budgetLines(1000, 50), `"campaign/000007","target":50`, `"campaign/000007","target":70`, 1))
	if r := imp(); r.Written != 1 || r.Changed != 1 || r.Unchanged != 999 {
		t.Fatalf("one changed %+v", r)
	}
	code, stdout, stderr := runCLI(t, ctx, "budget", "list", "--brokers", b.Addr(), "--group", "bi", "--name", "campaign/00000*")
	if code != 0 || strings.Count(stdout, "\n") != 10 || !strings.Contains(stdout, `{"version":1,"name":"campaign/000007","target":70,`) {
		t.Fatalf("list: exit %d\n%s%s", code, stdout, stderr)
	}

	// Problems: named by line and field; nothing is written.
	write(`{"name":"x","target":1,"period":"1m","parent":"account/3"}
{"name":"y","target":0,"period":"1m"}
{"name":"z","target":1,"period":"1m","parent":"nowhere"}
{"name":"x","target":1,"period":"1m"}
`)
	code, stdout, stderr = runCLI(t, ctx, "budget", "import", "--brokers", b.Addr(), "--group", "bi", file)
	want := []string{file + ":2: target: must be positive, got 0", file + ":4: name: \"x\" is also the name of " + file + ":1",
		file + `:3: parent: no budget is named "nowhere"`}
	if code != 1 || !strings.Contains(stderr, "3 problem(s); nothing was written") {
		t.Fatalf("bad file: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	code, stdout, _ = runCLI(t, ctx, "budget", "list", "--brokers", b.Addr(), "--group", "bi", "--name", "[xyz]")
	if code != 0 || stdout != "" {
		t.Fatalf("a refused import wrote: exit %d %q", code, stdout)
	}
}

func TestBudgetChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startEventsBroker(ctx, t)
	file := filepath.Join(t.TempDir(), "light.jsonl")
	if err := os.WriteFile(file, []byte(budgetLines(20, 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, ctx, "budget", "churn", "--brokers", b.Addr(), "--group", "bc",
		"--rate", "300", "--duration", "300ms", "--change", file)
	var sum struct{ Adds, Changes, Deletes int }
	if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if n := sum.Adds + sum.Changes + sum.Deletes; n == 0 || n > 90 || sum.Changes == 0 || sum.Deletes == 0 {
		t.Fatalf("summary %+v", sum)
	}
	// What it wrote is on the control topic: the adds not deleted since.
	code, stdout, _ = runCLI(t, ctx, "budget", "list", "--brokers", b.Addr(), "--group", "bc", "--name", "churn-*")
	if code != 0 || strings.Count(stdout, `"deleted":true`) != sum.Deletes || strings.Count(stdout, "\n") != sum.Adds {
		t.Fatalf("list: exit %d\n%s", code, stdout)
	}
}
