package loadgen

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func abc() []Budget { return []Budget{{"a", 1}, {"b", 1}, {"c", 1}} }

func TestDeterministic(t *testing.T) {
	a := mustNew(t, Config{Seed: 7, Users: 100, Budgets: abc()})
	b := mustNew(t, Config{Seed: 7, Users: 100, Budgets: abc()})
	c := mustNew(t, Config{Seed: 8, Users: 100, Budgets: abc()})
	same := 0
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		ea, eb, ec := a.Next(now), b.Next(now), c.Next(now)
		if !reflect.DeepEqual(ea, eb) {
			t.Fatalf("event %d differs for the same seed: %+v vs %+v", i, ea, eb)
		}
		if ea.User == ec.User && ea.Campaign == ec.Campaign && ea.Score == ec.Score {
			same++
		}
	}
	if same > 100 {
		t.Errorf("seeds 7 and 8 agree on %d of 1000 events", same)
	}
	if a.Generated() != 1000 {
		t.Errorf("Generated() = %d", a.Generated())
	}
}

func TestUniqueIDs(t *testing.T) {
	g := mustNew(t, Config{Seed: 42, Budgets: abc()})
	seen := make(map[string]bool)
	for range 100_000 {
		e := g.Next(t0)
		if seen[e.ID] {
			t.Fatalf("duplicate id %s", e.ID)
		}
		seen[e.ID] = true
	}
	if first := mustNew(t, Config{Seed: 42, Budgets: abc()}).Next(t0).ID; first != "42-1" {
		t.Errorf("first id = %q, want 42-1", first)
	}
}

func TestZipfSkew(t *testing.T) {
	const users, n = 1000, 200_000
	g := mustNew(t, Config{Seed: 1, Users: users, Skew: 1.1, Budgets: abc()})
	counts := make(map[string]int)
	for range n {
		counts[g.Next(t0).User]++
	}
	if len(counts) > users {
		t.Fatalf("%d distinct users, more than %d", len(counts), users)
	}
	// Rank k has probability proportional to 1/(1+k)^1.1; compare the
	// head with the expectation loosely (n is large, the bounds are wide).
	var h float64
	for k := range users {
		h += math.Pow(float64(1+k), -1.1)
	}
	for _, k := range []int{0, 1, 9} {
		want := n * math.Pow(float64(1+k), -1.1) / h
		got := float64(counts["user-"+strconv.Itoa(k)])
		if got < 0.85*want || got > 1.15*want {
			t.Errorf("user-%d: %v events, want about %.0f", k, got, want)
		}
	}
	// The most popular user gets far more than a uniform share.
	if counts["user-0"] < 20*n/users {
		t.Errorf("user-0 got %d events, not skewed", counts["user-0"])
	}
}

func TestBudgetWeights(t *testing.T) {
	const n = 100_000
	g := mustNew(t, Config{Seed: 3, Budgets: []Budget{{"a", 3}, {"b", 1}}})
	counts := map[string]int{}
	for range n {
		counts[g.Next(t0).Campaign]++
	}
	if len(counts) != 2 {
		t.Fatalf("campaigns %v", counts)
	}
	if share := float64(counts["a"]) / n; share < 0.73 || share > 0.77 {
		t.Errorf("a has share %.3f, want 0.75", share)
	}
	one := mustNew(t, Config{Seed: 3, Budgets: []Budget{{"only", 1}}})
	for range 100 {
		if e := one.Next(t0); e.Campaign != "only" || e.Score < 0 || e.Score >= 1 {
			t.Fatalf("event %+v", e)
		}
	}
}

func TestAppendJSON(t *testing.T) {
	g := mustNew(t, Config{Seed: 5, Budgets: []Budget{{`we"ird\ név`, 1}}})
	e := g.Next(t0.Add(1500 * time.Microsecond))
	raw := e.AppendJSON(nil)
	var got struct {
		ID, User, Campaign string
		Score              float64
		TS                 int64 `json:"ts"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	if got.ID != e.ID || got.User != e.User || got.Campaign != e.Campaign || got.Score != e.Score || got.TS != t0.UnixMilli()+1 {
		t.Fatalf("round trip %s -> %+v from %+v", raw, got, e)
	}
	var keys map[string]any
	_ = json.Unmarshal(raw, &keys)
	if len(keys) != 5 {
		t.Fatalf("keys %v", keys)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Budgets: []Budget{{"", 1}}},
		{Budgets: []Budget{{"a", 0}}},
		{Budgets: []Budget{{"a", math.Inf(1)}}},
		{Budgets: abc(), Users: -1},
		{Budgets: abc(), Skew: 1},
		{Budgets: abc(), Skew: math.NaN()},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

func TestParseBudgets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Budget
	}{
		{"a", []Budget{{"a", 1}}},
		{"a,b,c", abc()},
		{"a:3, b:1", []Budget{{"a", 3}, {"b", 1}}},
		{"a:0.5,b", []Budget{{"a", 0.5}, {"b", 1}}},
	} {
		got, err := ParseBudgets(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseBudgets(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "a,,b", "a:x", "a:-1", "a:0", ":3", "a,a", "a:inf"} {
		if _, err := ParseBudgets(in); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseBudgets(%q) = %v, want ErrConfig", in, err)
		}
	}
}

func TestSpread(t *testing.T) {
	if got := SpreadName("light-", 42, 100_000); got != "light-00042" {
		t.Fatalf("SpreadName = %q", got)
	}
	if got := SpreadName("x", 0, 1); got != "x0" {
		t.Fatalf("SpreadName = %q", got)
	}
	const n = 200_000
	for _, skew := range []float64{0, 1.1} {
		g, err := New(Config{Seed: 3, Budgets: []Budget{{"p0", 1}, {"p1", 1}}, Spread: Spread{Count: 1000, Prefix: "l-", Skew: skew}})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for range n {
			counts[g.Next(time.Time{}).Campaign]++
		}
		named := counts["p0"] + counts["p1"]
		// Half the events go to the spread (its default weight is the
		// named budgets' sum); within 1% of n here (a fixed seed).
		if d := float64(named)/n - 0.5; d > 0.01 || d < -0.01 {
			t.Errorf("skew %v: named budgets got %d of %d", skew, named, n)
		}
		shares := SpreadShares(1000, skew)
		for _, k := range []int{0, 9, 999} {
			want := shares[k] * n / 2
			got := float64(counts[SpreadName("l-", k, 1000)])
			if got < want*0.8-10 || got > want*1.2+10 {
				t.Errorf("skew %v: rank %d drew %v, want about %.0f", skew, k, got, want)
			}
		}
	}
	if _, err := New(Config{Spread: Spread{Count: 10, Skew: 0.5}}); err == nil {
		t.Error("skew 0.5 accepted")
	}
	if g, err := New(Config{Spread: Spread{Count: 3}}); err != nil || !strings.HasPrefix(g.Next(time.Time{}).Campaign, DefaultSpreadPrefix) {
		t.Errorf("spread alone: %v", err)
	}
}
