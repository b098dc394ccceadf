package config

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/splitter"
)

// example parses testdata/example.yaml afresh, so each case can change it.
func example(t *testing.T) *Config {
	t.Helper()
	c, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	return c
}

func TestExampleIsValid(t *testing.T) {
	c := example(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// want is one expected problem: its path and a part of its reason.
type want struct{ path, reason string }

// checkProblems asserts err is Problems holding exactly the wanted paths,
// each with a reason containing the wanted text.
func checkProblems(t *testing.T, err error, wants ...want) Problems {
	t.Helper()
	if len(wants) == 0 {
		if err != nil {
			t.Fatalf("unexpected problems: %v", err)
		}
		return nil
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T is not Problems", err)
	}
	var got, exp []string
	for _, p := range ps {
		got = append(got, p.Path)
	}
	for _, w := range wants {
		exp = append(exp, w.path)
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "|") != strings.Join(exp, "|") {
		t.Fatalf("problem paths = %q, want %q\n%v", got, exp, err)
	}
	for _, w := range wants {
		found := false
		for _, p := range ps {
			if p.Path == w.path && strings.Contains(p.Reason, w.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem at %s with reason containing %q in\n%v", w.path, w.reason, err)
		}
	}
	return ps
}

func TestValidateProblems(t *testing.T) {
	at := func(y, mo, d, h int) time.Time { return time.Date(y, time.Month(mo), d, h, 0, 0, 0, time.UTC) }
	cases := []struct {
		name   string
		change func(c *Config)
		want   []want
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, []want{{"brokers", "at least one broker"}}},
		{"broker without port", func(c *Config) { c.Brokers = []string{"localhost"} }, []want{{"brokers[0]", "host:port"}}},
		{"broker without host", func(c *Config) { c.Brokers = []string{"ok:1", ":9092"} }, []want{{"brokers[1]", "no host"}}},
		{"broker port out of range", func(c *Config) { c.Brokers = []string{"h:70000"} }, []want{{"brokers[0]", "port from 1 to 65535"}}},
		{"blank group", func(c *Config) { c.Group = " " }, []want{{"group", "empty"}}},
		{"no input", func(c *Config) { c.Topics.Input = nil }, []want{{"topics.input", "at least one"}}},
		{"empty input name", func(c *Config) { c.Topics.Input = []string{""} }, []want{{"topics.input[0]", "must name a topic"}}},
		{"no output", func(c *Config) { c.Topics.Output = "" }, []want{{"topics.output", "must name a topic"}}},
		{"output is input", func(c *Config) { c.Topics.Output = "events" }, []want{{"topics.output", `"events" is also topics.input[0]`}}},
		{"input twice", func(c *Config) { c.Topics.Input = []string{"events", "events"} }, []want{{"topics.input[1]", "also topics.input[0]"}}},
		{"reward topic is input", func(c *Config) { c.Topics.Rewards = []string{"events"} }, []want{{"topics.rewards[0]", "also topics.input[0]"}}},
		{"stats is output", func(c *Config) { c.Topics.Stats = "passed" }, []want{{"topics.stats", "also topics.output"},
			{"layers[0].experiments[0].variants[0].topic", "also topics.stats"}}},
		{"rejected is output", func(c *Config) { c.Topics.Rejected = "passed" }, []want{{"topics.rejected", "also topics.output"},
			{"layers[0].experiments[0].variants[0].topic", "also topics.rejected"}}},
		{"variant reads input", func(c *Config) { c.Layers[0].Experiments[0].Variants[1].Topic = "events" },
			[]want{{"layers[0].experiments[0].variants[1].topic", "also topics.input[0]"}}},
		{"variant writes rejected", func(c *Config) { c.Layers[0].Experiments[0].Variants[1].Topic = "rejected" },
			[]want{{"layers[0].experiments[0].variants[1].topic", "also topics.rejected"}}},
		{"illegal topic name", func(c *Config) { c.Topics.Output = "pass ed" }, []want{{"topics.output", "may only contain"}}},
		{"topic name too long", func(c *Config) { c.Topics.Output = strings.Repeat("a", 250) }, []want{{"topics.output", "more than Kafka's 249"}}},
		{"dot topic", func(c *Config) { c.Topics.Rejected = ".." }, []want{{"topics.rejected", "not allowed"}}},
		{"negative partitions", func(c *Config) { c.Topics.Partitions = -1 }, []want{{"topics.partitions", "at least 0"}}},
		{"unknown delivery", func(c *Config) { c.Delivery = "twice" }, []want{{"delivery", `got "twice"`}}},
		{"short sync interval", func(c *Config) { c.SyncInterval = 5 * time.Millisecond }, []want{{"sync_interval", "at least 10ms"}}},
		{"zero commit interval", func(c *Config) { c.CommitInterval = 0 }, []want{{"commit_interval", "positive"}}},
		{"no budget field", func(c *Config) { c.Fields.Budget = "" }, []want{{"fields.budget", "must name"}}},
		{"empty path segment", func(c *Config) { c.Fields.Key = "a..b" }, []want{{"fields.key", "empty segment"}}},
		{"trailing dot", func(c *Config) { c.Fields.Time = "ts." }, []want{{"fields.time", "empty segment"}}},
		{"space in path", func(c *Config) { c.Fields.ID = "the id" }, []want{{"fields.id", "white space"}}},
		{"score and expression", func(c *Config) { c.Fields.ScoreExpr = "score * 2" }, []want{{"fields.score_expr", "not both"}}},
		{"blank expression", func(c *Config) { c.Fields.Score, c.Fields.ScoreExpr = "", "  " }, []want{{"fields.score_expr", "blank"}}},
		{"reward topics without reward budget field", func(c *Config) { c.Rewards.Budget = "" }, []want{{"rewards.budget", "topics.rewards is set"}}},
		{"rewards without reward topics", func(c *Config) { c.Topics.Rewards = nil },
			[]want{{"rewards", "topics.rewards is empty"}, {"budgets[2].kind", "needs topics.rewards"}}},
		{"no budgets", func(c *Config) { c.Budgets = nil; c.Layers = nil }, []want{{"budgets", "at least one"}}},
		{"nameless budget", func(c *Config) { c.Budgets[2].Name = "" }, []want{{"budgets[2].name", "empty"}}},
		{"budget name with newline", func(c *Config) { c.Budgets[2].Name = "a\nb" }, []want{{"budgets[2].name", "control characters"}}},
		{"duplicate budget", func(c *Config) { c.Budgets[2].Name = "campaign-a" }, []want{{"budgets[2].name", "also the name of budgets[1]"}}},
		{"zero target", func(c *Config) { c.Budgets[1].Target = 0 }, []want{{"budgets[1].target", "positive"}}},
		{"negative target", func(c *Config) { c.Budgets[1].Target = -5 }, []want{{"budgets[1].target", "positive"}}},
		{"NaN target", func(c *Config) { c.Budgets[1].Target = math.NaN() }, []want{{"budgets[1].target", "finite"}}},
		{"infinite target", func(c *Config) { c.Budgets[1].Target = math.Inf(1) }, []want{{"budgets[1].target", "finite"}}},
		{"unknown kind", func(c *Config) { c.Budgets[1].Kind = "views" }, []want{{"budgets[1].kind", `got "views"`}}},
		{"end before begin", func(c *Config) { c.Budgets[1].End = at(2026, 11, 22, 9) }, []want{{"budgets[1].end", "after begin"}}},
		{"end equals begin", func(c *Config) { c.Budgets[1].End = c.Budgets[1].Begin }, []want{{"budgets[1].end", "after begin"}}},
		{"begin without end", func(c *Config) { c.Budgets[1].End = time.Time{} }, []want{{"budgets[1].end", "set with begin"}}},
		{"end without begin", func(c *Config) { c.Budgets[1].Begin = time.Time{} }, []want{{"budgets[1].begin", "set with end"}}},
		{"window and period", func(c *Config) { c.Budgets[1].Period = time.Minute }, []want{{"budgets[1].period", "not both"}}},
		{"neither window nor period", func(c *Config) { c.Budgets[0].Period = 0 }, []want{{"budgets[0]", "begin and end"}}},
		{"negative period", func(c *Config) { c.Budgets[0].Period = -time.Second }, []want{{"budgets[0].period", "positive"}}},
		{"reserve on a period", func(c *Config) { c.Budgets[0].Reserve = time.Second }, []want{{"budgets[0].reserve", "period budgets"}}},
		{"reserve as long as the window", func(c *Config) { c.Budgets[1].Reserve = time.Hour }, []want{{"budgets[1].reserve", "shorter than the window"}}},
		{"negative reserve", func(c *Config) { c.Budgets[1].Reserve = -time.Second }, []want{{"budgets[1].reserve", "at least 0"}}},
		{"missing parent", func(c *Config) { c.Budgets[1].Parent = "nobody" }, []want{{"budgets[1].parent", `no budget is named "nobody"`}}},
		{"own parent", func(c *Config) { c.Budgets[1].Parent = "campaign-a" }, []want{{"budgets[1].parent", "own parent"}}},
		{"parent cycle", func(c *Config) { c.Budgets[0].Parent = "campaign-b" },
			[]want{{"budgets[0].parent", "cycle: account -> campaign-b -> account"}}},
		{"long parent cycle", func(c *Config) { c.Budgets[0].Parent = "campaign-b"; c.Budgets[2].Parent = "campaign-a" },
			[]want{{"budgets[0].parent", "account -> campaign-b -> campaign-a -> account"}}},
		{"scored without score", func(c *Config) { c.Fields.Score = "" }, []want{{"budgets[1].scored", "fields.score"}}},
		{"scored with expression", func(c *Config) { c.Fields.Score, c.Fields.ScoreExpr = "", "score*2" }, nil},
		{"bad layer", func(c *Config) { c.Layers[0].Experiments[0].Allocation = 0 }, []want{{"layers[0].experiments[0].allocation", "percentage"}}},
		{"blank variant topic", func(c *Config) { c.Layers[0].Experiments[0].Variants[0].Topic = "" }, []want{{"layers[0].experiments[0].variants[0].topic", ""}}},
		{"layers optional", func(c *Config) { c.Layers = []splitter.Layer{} }, nil},
		{"bad listen", func(c *Config) { c.HTTP.Listen = "9090" }, []want{{"http.listen", "host:port"}}},
		{"listen on any host", func(c *Config) { c.HTTP.Listen = ":0" }, nil},
		{"unknown log format", func(c *Config) { c.Log.Format = "xml" }, []want{{"log.format", `got "xml"`}}},
		{"unknown log level", func(c *Config) { c.Log.Level = "loud" }, []want{{"log.level", `got "loud"`}}},
		{"empty log level", func(c *Config) { c.Log.Level = "" }, []want{{"log.level", "must be one of"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := example(t)
			tc.change(c)
			checkProblems(t, c.Validate(), tc.want...)
		})
	}
}

// A rewards budget's prior: a conversion and a delay of at least 0, on
// rewards budgets only.
func TestValidateRewardPrior(t *testing.T) {
	for name, c := range map[string]struct {
		change func(c *Config)
		want   []want
	}{
		"negative conversion":   {func(c *Config) { c.Budgets[2].Conversion = -0.1 }, []want{{"budgets[2].conversion", "≥ 0"}}},
		"NaN conversion":        {func(c *Config) { c.Budgets[2].Conversion = math.NaN() }, []want{{"budgets[2].conversion", "finite"}}},
		"negative reward delay": {func(c *Config) { c.Budgets[2].RewardDelay = -time.Second }, []want{{"budgets[2].reward_delay", "at least 0"}}},
		"prior on a passes budget": {func(c *Config) { c.Budgets[1].Conversion, c.Budgets[1].RewardDelay = 0.1, time.Second },
			[]want{{"budgets[1].conversion", "rewards budgets only"}, {"budgets[1].reward_delay", "rewards budgets only"}}},
		"no prior": {func(c *Config) { c.Budgets[2].Conversion, c.Budgets[2].RewardDelay = 0, 0 }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := example(t)
			c.change(cfg)
			checkProblems(t, cfg.Validate(), c.want...)
		})
	}
}

func TestValidateReportsEverythingAtOnce(t *testing.T) {
	c := example(t)
	c.Brokers = nil
	c.Topics.Output = ""
	c.Delivery = "maybe"
	c.Budgets[1].Target = 0
	c.Budgets[2].End = c.Budgets[2].Begin
	c.Log.Format = "xml"
	ps := checkProblems(t, c.Validate(),
		want{"brokers", ""}, want{"topics.output", ""}, want{"delivery", ""},
		want{"budgets[1].target", ""}, want{"budgets[2].end", ""}, want{"log.format", ""})
	// Problems keep the lines of the fields they were parsed from.
	for _, p := range ps {
		if p.Path == "budgets[2].end" && p.Line != 40 {
			t.Errorf("budgets[2].end line = %d, want 40", p.Line)
		}
		if p.Path == "topics.output" && p.Line != 8 {
			t.Errorf("topics.output line = %d, want 8", p.Line)
		}
	}
}

func TestValidateConfigBuiltInCode(t *testing.T) {
	c := &Config{
		Brokers: []string{"127.0.0.1:9092"},
		Topics:  Topics{Input: []string{"in"}, Output: "out"},
		Fields:  Fields{Budget: "campaign"},
		Budgets: []Budget{{Name: "b", Target: 10, Period: time.Minute}},
	}
	checkProblems(t, c.Validate(), want{"delivery", ""}, want{"group_protocol", ""}, want{"sync_interval", ""},
		want{"commit_interval", ""}, want{"topics.dead_letter", ""}, want{"topics.stats", ""},
		want{"group", ""},
		want{"http.listen", ""}, want{"log.format", ""}, want{"log.level", ""})
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Topics.Stats != "throttler.stats" || c.Topics.DeadLetter != "throttler.dead-letter" ||
		c.SyncInterval != time.Second ||
		c.CommitInterval != 100*time.Millisecond || c.Delivery != DeliveryExactlyOnce ||
		c.Budgets[0].Kind != KindPasses || c.HTTP.Listen != "127.0.0.1:9090" || c.Log != (Log{"json", "info"}) {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

// TestRemovedField: topics.checkpoints, a field of builds that kept
// counters in a checkpoint topic, is refused with the reason and its
// line.
func TestRemovedField(t *testing.T) {
	_, err := Parse([]byte("brokers: [127.0.0.1:9092]\ntopics:\n  input: [in]\n  output: out\n  checkpoints: old.ckpt\nfields: {budget: b}\nbudgets:\n  - {name: b, target: 1, period: 1m}\n"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "topics.checkpoints" || ps[0].Line != 5 || !strings.Contains(ps[0].Reason, "no longer read") {
		t.Fatalf("err = %v", err)
	}
}
