package config

import (
	"errors"
	"fmt"
	"github.com/throttler/throttler/flow"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadWithFile writes the minimal config with budgets_file: b.jsonl and
// that file into a temporary directory, and loads it from another
// working directory (the file is found beside the config).
func loadWithFile(t *testing.T, extraYAML, lines string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(minimal+"budgets_file: b.jsonl\n"+extraYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	return Load(cfg)
}

func TestBudgetsFileLoads(t *testing.T) {
	c, err := loadWithFile(t, "", `# two budgets and a blank line
{"name":"acct","target":1000,"period":"1h","action":"reject"}

{"name":"c1","target":15,"begin":"2026-11-22T10:00:00Z","end":"2026-11-22T12:00:00Z","reserve":"30s","parent":"acct","scored":false,"kind":"passes"}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Budgets) != 3 || c.Budgets[0].Name != "a" || c.Budgets[1].Name != "acct" || c.Budgets[2].Name != "c1" {
		t.Fatalf("budgets %+v", c.Budgets)
	}
	c1 := c.Budgets[2]
	want := Budget{Name: "c1", Target: 15, Begin: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		End: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), Reserve: 30 * time.Second, Parent: "acct",
		Kind: KindPasses, Action: ActionReject}
	if !c1.Begin.Equal(want.Begin) || !c1.End.Equal(want.End) || c1.Reserve != want.Reserve || c1.Parent != want.Parent ||
		c1.Target != want.Target || c1.Kind != want.Kind || c1.Action != want.Action {
		t.Fatalf("c1 = %+v, want %+v", c1, want)
	}
	if c.Budgets[1].Period != time.Hour || c.Budgets[1].Kind != KindPasses {
		t.Fatalf("acct = %+v: defaults not applied to the file's budgets", c.Budgets[1])
	}
	if _, err := c.FlowBudgets(); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetsFileProblems(t *testing.T) {
	good := `{"name":"x","target":1,"period":"1m"}` + "\n"
	cases := []struct {
		name, yaml, lines string
		want              []string // Problem.Error() of each, in order
	}{
		{"not an object", "", good + "[1,2]\n", []string{"b.jsonl:2: want one JSON object, got a JSON array"}},
		{"bad JSON", "", "{\"name\":\n", []string{"b.jsonl:1: want one JSON object, got invalid JSON"}},
		{"unknown field", "", `{"name":"x","target":1,"period":"1m","colour":"red"}`,
			[]string{"b.jsonl:1: colour: unknown field (want name, target"}},
		{"wrong types", "", `{"name":7,"target":"lots","period":"1m","scored":"yes"}`,
			[]string{"b.jsonl:1: name: want a string, got 7", `b.jsonl:1: target: want a number, got "lots"`, `b.jsonl:1: scored: want true or false, got "yes"`}},
		{"bad time and duration", "", `{"name":"x","target":1,"begin":"2026-11-22","end":"2026-11-22T12:00:00Z","reserve":"half a minute"}`,
			[]string{`b.jsonl:1: begin: want an RFC 3339 time such as 2026-11-22T10:00:00Z, got "2026-11-22"`, `b.jsonl:1: reserve: want a duration`}},
		{"invalid budget", "", good + `{"name":"y","target":0,"period":"1m"}`, []string{"b.jsonl:2: target: must be positive, got 0"}},
		{"name too long", "", `{"name":"` + strings.Repeat("n", 1025) + `","target":1,"period":"1m"}`, []string{"b.jsonl:1: name: is 1025 bytes long, more than 1024"}},
		{"no window nor period", "", `{"name":"y","target":3}`, []string{"b.jsonl:1: needs begin and end (a window) or period"}},
		{"duplicate in the file", "", good + good, []string{`b.jsonl:2: name: "x" is also the name of b.jsonl:1`}},
		{"duplicate of the YAML's", "", `{"name":"a","target":1,"period":"1m"}`, []string{`b.jsonl:1: name: "a" is also the name of budgets[0]`}},
		{"missing parent", "", `{"name":"y","target":1,"period":"1m","parent":"nobody"}`, []string{`b.jsonl:1: parent: no budget is named "nobody"`}},
		{"delay parent", "", `{"name":"d","target":1,"period":"1m","action":"delay"}` + "\n" + `{"name":"k","target":1,"period":"1m","parent":"d"}`,
			[]string{`b.jsonl:2: parent: "d" is a delay budget, which cannot be a parent`}},
		{"cap named as a file budget", "caps: [{name: x, rate: 1/1h}]\n", good, []string{`caps[0].name: "x" is also the name of b.jsonl:1`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWithFile(t, tc.yaml, tc.lines)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("err = %v, want Problems", err)
			}
			if len(ps) != len(tc.want) {
				t.Fatalf("problems:\n%v\nwant %d", ps, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(ps[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ps[i].Error(), w)
				}
			}
		})
	}
}

func TestBudgetsFileCycleWithYAML(t *testing.T) {
	yaml := strings.Replace(minimal, "period: 1m", "period: 1m\n    parent: y", 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(`{"name":"y","target":1,"period":"1m","parent":"a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yaml+"budgets_file: b.jsonl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(filepath.Join(dir, "c.yaml"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 {
		t.Fatalf("err = %v, want one problem", err)
	}
	if got := ps[0].Error(); got != "budgets[0].parent: parents form a cycle: a -> y -> a (line 11)" {
		t.Fatalf("problem = %q", got)
	}
}

func TestBudgetsFileMissing(t *testing.T) {
	for file, reason := range map[string]string{"/nonexistent/b.jsonl": "cannot read", t.TempDir(): "not a regular file"} {
		_, err := Parse([]byte(minimal + "budgets_file: " + file + "\n"))
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "budgets_file" || ps[0].Line != 11 || !strings.Contains(ps[0].Reason, reason) {
			t.Fatalf("%s: err = %v", file, err)
		}
	}
}

func TestBudgetsFileOnly(t *testing.T) {
	yaml := strings.Replace(minimal, "budgets:\n  - name: a\n    target: 100\n    period: 1m\n", "", 1)
	path := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(path, []byte(`{"name":"x","target":1,"period":"1m"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(yaml + "budgets_file: " + path + "\n"))
	if err != nil || len(c.Budgets) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	if err := os.WriteFile(path, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(yaml + "budgets_file: " + path + "\n"))
	if err == nil || !strings.Contains(err.Error(), "budgets: must list at least one budget (here or in budgets_file)") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadBudgetsLongLine(t *testing.T) {
	long := `{"name":"` + strings.Repeat("x", MaxBudgetLine) + `"}`
	_, _, ps := ReadBudgets(strings.NewReader(`{"name":"a","target":1,"period":"1m"}`+"\n"+long+"\n"), "f")
	if len(ps) != 1 || ps[0].File != "f" || ps[0].Line != 2 || !strings.Contains(ps[0].Reason, "longer than") {
		t.Fatalf("problems %v", ps)
	}
}

func TestCheckBudgetLines(t *testing.T) {
	bs, lines, ps := ReadBudgets(strings.NewReader(`{"name":"c1","target":1,"period":"1m","parent":"acct"}
{"name":"c2","target":1,"period":"1m","parent":"gone"}
{"name":"acct","target":0,"period":"1h"}
`), "in.jsonl")
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	known := []Budget{{Name: "acct", Target: 5, Period: time.Hour}, {Name: "bad", Target: -1}}
	got := CheckBudgetLines(bs, lines, "in.jsonl", known)
	want := []string{`in.jsonl:3: target: must be positive, got 0`, `in.jsonl:2: parent: no budget is named "gone"`}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, got[i].Error(), want[i])
		}
	}
	// A known parent is enough; the known budgets' own problems are not
	// reported.
	if got := CheckBudgetLines(bs[:1], lines[:1], "in.jsonl", known); len(got) != 0 {
		t.Fatalf("problems %v", got)
	}
}

// TestParentsLinear checks deep trees and long chains, which a walk per
// budget would make quadratic: a chain of 100,000 budgets is checked at
// once (one problem: the first budget nested past flow.MaxDepth), and a
// cycle closing it is reported once, on its first budget.
func TestParentsLinear(t *testing.T) {
	const n = 100_000
	bs := make([]Budget, n)
	for i := range bs {
		bs[i] = Budget{Name: fmt.Sprintf("b%06d", i), Target: 1, Period: time.Minute}
		if i > 0 {
			bs[i].Parent = bs[i-1].Name
		}
	}
	c := &Config{Budgets: bs}
	_, err := c.FlowBudgets()
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != fmt.Sprintf("budgets[%d].parent", flow.MaxDepth) {
		t.Fatalf("a chain of %d: %.300v", n, err)
	}
	bs[0].Parent = bs[n-1].Name
	_, err = c.FlowBudgets()
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "budgets[0].parent" ||
		!strings.HasPrefix(ps[0].Reason, "parents form a cycle: b000000 -> b099999 -> b099998 ->") {
		t.Fatalf("err = %.300v", err)
	}
}
