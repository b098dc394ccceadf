package scale

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

func TestIDSeq(t *testing.T) {
	for v, want := range map[string]uint64{`{"id":"1-42","user":"u"}`: 42, `{"x":1,"id":"7-0"}`: 0} {
		if got, ok := idSeq([]byte(v)); !ok || got != want {
			t.Errorf("%s: %d %v", v, got, ok)
		}
	}
	for _, v := range []string{`{"id":42}`, `{"id":"42"}`, `{"id":"1-x"}`, `{}`} {
		if _, ok := idSeq([]byte(v)); ok {
			t.Errorf("%s: parsed", v)
		}
	}
}

// TestTailGaps feeds a tail records at fixed instants t0..t9: the gaps
// land in the phase their second record arrives in, and only once the
// steady state began.
func TestTailGaps(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// steady from 10s, changes from 20s to 30s, load end 40s
	tl := &tail{paced: map[string]int{pacedName(0): 0}, passes: make([]int64, 1), budgets: map[string]struct{}{}, last: map[int32]time.Time{},
		bounds: [phases + 1]time.Time{at(10), at(20), at(30), at(40)}}
	rec := func(p int32, s float64, seq string, topic, budget string) {
		tl.now = func() time.Time { return at(s) }
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(`{"id":"1-` + seq + `"}`)}
		if budget != "" {
			r.Headers = []kgo.RecordHeader{{Key: "throttler-budget", Value: []byte(budget)}}
		}
		tl.record(r)
	}
	rec(0, 1, "1", outputTopic, pacedName(0))
	rec(0, 9, "2", rejectTopic, "light-2")     // a gap of 8s before the steady state: not counted
	rec(0, 12, "3", outputTopic, "light-1")    // 3s, started before the steady state: not counted
	rec(0, 14, "4", outputTopic, pacedName(0)) // steady: 2s
	rec(1, 15, "5", deadTopic, "")             // first of its partition: no gap
	rec(1, 25, "6", outputTopic, "")           // changes: 10s
	rec(0, 31, "4", outputTopic, pacedName(0)) // after: 17s; id 4 again
	rec(0, 45, "7", outputTopic, "")           // after the load: not counted
	rec(0, 46, "bad", outputTopic, "")
	if tl.gaps != [phases]time.Duration{2 * time.Second, 10 * time.Second, 17 * time.Second} {
		t.Fatalf("gaps %v", tl.gaps)
	}
	if tl.passes[0] != 3 || tl.badIDs != 1 || !tl.first.Equal(at(1)) {
		t.Fatalf("passes %v bad %d first %v", tl.passes, tl.badIDs, tl.first)
	}
	if n := tl.activeBudgets(); n != 3 { // pacedName(0), light-1 and light-2 (a reject)
		t.Fatalf("%d active budgets, want 3", n)
	}
	input := make([]bool, 10)
	for _, s := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
		input[s] = true
	}
	if d, lost, dup := tl.deliveries(input); d != 7 || lost != 1 || dup != 1 {
		t.Fatalf("delivered %d lost %d duplicated %d", d, lost, dup)
	}
}

// TestRowBudgets checks the budgets of a row: the generator's names and
// shares, and the light budgets' file and targets.
func TestRowBudgets(t *testing.T) {
	c := Config{Budgets: []int{1000}, Binary: "throttler", Skew: DefaultSkew}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	g, err := loadgen.New(c.generator(1000))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	const n = 100_000
	for range n {
		counts[g.Next(time.Time{}).Campaign]++
	}
	paced := 0
	for i := range c.Paced {
		paced += counts[pacedName(i)]
	}
	if d := float64(paced)/n - c.PacedShare; math.Abs(d) > 0.01 {
		t.Fatalf("paced budgets got %d of %d", paced, n)
	}
	path := filepath.Join(t.TempDir(), "light.jsonl")
	if err := c.writeBudgetsFile(path, 1000); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	light, _, ps := config.ReadBudgets(bufio.NewReader(f), "light.jsonl")
	if len(ps) > 0 || len(light) != 990 || light[0].Name != "light-000" || light[989].Name != "light-989" {
		t.Fatalf("light budgets %d %v", len(light), ps)
	}
	// Rank 0 expects the most a minute: twice that is its target.
	shares := loadgen.SpreadShares(990, c.Skew)
	for _, k := range []int{0, 989} {
		want := max(10, math.Ceil(2*c.Rate*0.5*60*shares[k]))
		if got := light[k].Target; math.Abs(got-want) > 1 {
			t.Fatalf("rank %d: target %v, want %v", k, got, want)
		}
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := c.writeConfig(cfg, "127.0.0.1:9092", path, time.Now()); err != nil {
		t.Fatal(err)
	}
	parsed, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Budgets) != 1000 || parsed.Budgets[0].Target != c.pacedTarget() || c.pacedTarget() != 7500 {
		t.Fatalf("config: %d budgets, first %+v", len(parsed.Budgets), parsed.Budgets[0])
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Budgets: []int{5}}, {Rate: -1}, {Duration: time.Second}, {PacedShare: 1},
		{Skew: 0.5}, {Delivery: "twice"}, {ChurnRate: -1}, {Yardstick: -1}} {
		c.Binary = "throttler"
		if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "invalid scale config") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// The brokers and workers run in their row's directory: a relative --dir
// or --cpuprofile-dir would name a directory inside it.
func TestRelativeDirsMadeAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Dir: "run", ProfileDir: "prof"}
	if err := c.absolutePaths(); err != nil {
		t.Fatal(err)
	}
	if c.Dir != filepath.Join(wd, "run") || c.ProfileDir != filepath.Join(wd, "prof") {
		t.Errorf("Dir %q, ProfileDir %q: want both under %s", c.Dir, c.ProfileDir, wd)
	}
	empty := Config{}
	if err := empty.absolutePaths(); err != nil || empty.Dir != "" || empty.ProfileDir != "" {
		t.Errorf("empty paths: %+v, %v", empty, err)
	}
}
