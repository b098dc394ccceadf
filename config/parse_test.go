package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// minimal is the smallest valid config; cases append or replace lines.
const minimal = `brokers: [127.0.0.1:9092]
topics:
  input: [events]
  output: passed
fields:
  budget: campaign
budgets:
  - name: a
    target: 100
    period: 1m
`

func TestParseMinimalAppliesDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != DefaultGroup || c.Topics.DeadLetter != "throttler.dead-letter" || c.Topics.Stats != "throttler.stats" ||
		c.Delivery != DeliveryExactlyOnce ||
		c.SyncInterval != time.Second || c.CommitInterval != 100*time.Millisecond ||
		c.Budgets[0].Kind != KindPasses || c.HTTP.Listen != "127.0.0.1:9090" || c.Log.Format != "json" || c.Log.Level != "info" {
		t.Fatalf("defaults not applied: %+v", c)
	}
	// Derived topic names follow the group.
	c, err = Parse([]byte(minimal + "group: g1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Topics.DeadLetter != "g1.dead-letter" || c.Topics.Stats != "g1.stats" {
		t.Fatalf("derived topics = %+v", c.Topics)
	}
}

// wantLine is an expected problem of a YAML case: path, reason part, line.
type wantLine struct {
	path, reason string
	line         int
}

func TestParseProblems(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []wantLine
	}{
		{"unknown top-level field", minimal + "colour: red\n", []wantLine{{"colour", "unknown field", 11}}},
		{"unknown nested field", strings.Replace(minimal, "  output: passed\n", "  output: passed\n  outptu: x\n", 1),
			[]wantLine{{"topics.outptu", "unknown field", 5}}},
		{"unknown budget field", minimal + "    colour: red\n", []wantLine{{"budgets[0].colour", "unknown field", 11}}},
		{"unknown layer field", minimal + "layers:\n  - name: l\n    colour: red\n    experiments: []\n",
			[]wantLine{{"layers[0].colour", "unknown field", 13}, {"layers[0].experiments", "at least one experiment", 14}}},
		{"number expected", strings.Replace(minimal, "target: 100", "target: lots", 1),
			[]wantLine{{"budgets[0].target", `want a number, got "lots"`, 9}}},
		{"duration expected", minimal + "sync_interval: 1 minute\n",
			[]wantLine{{"sync_interval", "want a duration", 11}}},
		{"bare number is not a duration", minimal + "commit_interval: 100\n",
			[]wantLine{{"commit_interval", "want a duration", 11}}},
		{"list expected", strings.Replace(minimal, "[127.0.0.1:9092]", "localhost:9092", 1),
			[]wantLine{{"brokers", `want a list, got "localhost:9092"`, 1}}},
		{"mapping expected", minimal + "http: 9090\n", []wantLine{{"http", "want a mapping", 11}}},
		{"bare date", strings.Replace(minimal, "period: 1m", "begin: 2026-11-22\n    end: 2026-11-23T00:00:00Z", 1),
			[]wantLine{{"budgets[0].begin", "RFC 3339", 10}}},
		{"time without zone", strings.Replace(minimal, "period: 1m", "begin: 2026-11-22T10:00:00Z\n    end: 2026-11-22 11:00:00", 1),
			[]wantLine{{"budgets[0].end", "RFC 3339", 11}}},
		{"quoted bad time", strings.Replace(minimal, "period: 1m", "begin: \"2026-13-22T10:00:00Z\"\n    end: 2026-11-22T11:00:00Z", 1),
			[]wantLine{{"budgets[0].begin", "RFC 3339", 10}}},
		{"several decode problems", minimal + "colour: red\nsync_interval: soon\n",
			[]wantLine{{"colour", "unknown field", 11}, {"sync_interval", "duration", 12}}},
		{"duplicate key", minimal + "group: a\ngroup: b\n", []wantLine{{"group", "duplicate key", 12}}},
		{"syntax error", "brokers: [a:1\ntopics: {\n", []wantLine{{"", "YAML syntax", 0}}},
		{"tab indentation", "brokers:\n\t- a:1\n", []wantLine{{"", "YAML syntax", 0}}},
		{"two documents", minimal + "---\nbrokers: []\n", []wantLine{{"", "more than one YAML document", 0}}},
		{"not a mapping", "just a string\n", []wantLine{{"", "want a mapping", 1}}},
		{"validation with lines", strings.Replace(minimal, "period: 1m", "period: 1m\n    parent: nobody", 1),
			[]wantLine{{"budgets[0].parent", "nobody", 11}}},
		{"missing field gets parent line", strings.Replace(minimal, "  output: passed\n", "", 1),
			[]wantLine{{"topics.output", "is required", 2}}},
		{"empty file", "", []wantLine{{"brokers", "", 0}, {"topics.input", "", 0}, {"topics.output", "", 0},
			{"fields.budget", "", 0}, {"budgets", "", 0}}},
		{"comments only", "# nothing\n", []wantLine{{"brokers", "", 0}, {"topics.input", "", 0}, {"topics.output", "", 0},
			{"fields.budget", "", 0}, {"budgets", "", 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if c != nil {
				t.Errorf("Parse returned a config with error %v", err)
			}
			var ws []want
			for _, w := range tc.want {
				ws = append(ws, want{w.path, w.reason})
			}
			ps := checkProblems(t, err, ws...)
			for _, w := range tc.want {
				for _, p := range ps {
					if p.Path != w.path {
						continue
					}
					if w.line > 0 && p.Line != w.line {
						t.Errorf("%s: line %d, want %d (%v)", w.path, p.Line, w.line, p)
					}
					if w.path == "" && w.line == 0 && tc.yaml != "" && p.Line == 0 &&
						!strings.Contains(p.Reason, "YAML syntax: ") {
						t.Errorf("syntax problem without line: %v", p)
					}
				}
			}
		})
	}
}

func TestParseKeepsYAMLTimestampZones(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(minimal, "period: 1m",
		"begin: 2026-11-22T10:00:00+01:00\n    end: \"2026-11-22T11:00:00.5Z\"", 1)))
	if err != nil {
		t.Fatal(err)
	}
	b := c.Budgets[0]
	if !b.Begin.Equal(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)) || !b.End.Equal(time.Date(2026, 11, 22, 11, 0, 0, 5e8, time.UTC)) {
		t.Fatalf("begin %v end %v", b.Begin, b.End)
	}
}

func TestProblemFormat(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Path: "budgets[2].end", Reason: "must be after begin", Line: 12}, "budgets[2].end: must be after begin (line 12)"},
		{Problem{Path: "brokers", Reason: "missing"}, "brokers: missing"},
		{Problem{Reason: "YAML syntax: bad", Line: 3}, "line 3: YAML syntax: bad"},
		{Problem{Reason: "bad"}, "bad"},
	} {
		if got := tc.p.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	ps := Problems{{Path: "a", Reason: "x"}, {Path: "b", Reason: "y"}}
	if got := ps.Error(); got != "invalid config: a: x; b: y" {
		t.Errorf("Problems.Error() = %q", got)
	}
	var p Problem
	if !errors.As(error(ps), &p) || p.Path != "a" {
		t.Errorf("errors.As found %+v", p)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Fatalf("missing file: %v", err)
	}
	path := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(path, []byte("brokers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) {
		t.Fatalf("invalid file: %v", err)
	}
}

func TestFlowBudgets(t *testing.T) {
	c := example(t)
	bs, err := c.FlowBudgets()
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Fatalf("got %d budgets", len(bs))
	}
	a := bs[1]
	if a.Name != "campaign-a" || a.Target != 12000 || a.Reserve != 30*time.Second || !a.Scored || a.Rewards ||
		a.Parent != "account" || !a.Begin.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) ||
		!a.End.Equal(time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)) || a.Period != 0 {
		t.Errorf("campaign-a = %+v", a)
	}
	if bs[0].Period != time.Hour || !bs[0].Begin.IsZero() || bs[0].Parent != "" {
		t.Errorf("account = %+v", bs[0])
	}
	if !bs[2].Rewards || bs[2].Conversion != 0.02 || bs[2].RewardDelay != 15*time.Second {
		t.Errorf("campaign-b = %+v, want Rewards with a prior of 0.02 after 15s", bs[2])
	}

	// Only budget problems stop the conversion.
	c.Log.Format = "xml"
	if _, err := c.FlowBudgets(); err != nil {
		t.Fatalf("non-budget problem stopped FlowBudgets: %v", err)
	}
	c.Budgets[1].Parent = "nobody"
	_, err = c.FlowBudgets()
	checkProblems(t, err, want{"budgets[1].parent", "nobody"})
}

func TestPartitionsFor(t *testing.T) {
	for _, tc := range []struct{ set, input, want int32 }{{0, 0, 12}, {0, 6, 6}, {3, 6, 3}, {3, 0, 3}} {
		if got := (Topics{Partitions: tc.set}).PartitionsFor(tc.input); got != tc.want {
			t.Errorf("PartitionsFor(set %d, input %d) = %d, want %d", tc.set, tc.input, got, tc.want)
		}
	}
}

func ExampleParse() {
	_, err := Parse([]byte(`brokers: [localhost]
topics: {input: [events], output: events}
fields: {budget: campaign}
budgets:
  - {name: a, target: 10, begin: 2026-11-22T11:00:00Z, end: 2026-11-22T10:00:00Z}
`))
	var ps Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Println(p)
		}
	}
	// Output:
	// brokers[0]: want host:port, got "localhost" (line 1)
	// topics.output: topic "events" is also topics.input[0] (line 2)
	// budgets[0].end: must be after begin (2026-11-22T11:00:00Z) (line 5)
}
