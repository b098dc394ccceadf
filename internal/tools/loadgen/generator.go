// Package loadgen generates synthetic events for the throttler and produces
// them to Kafka at a steady rate.
//
// An event is one JSON object per record, keyed by its user:
//
//	{"id":"7-42","user":"user-3","campaign":"a","score":0.6046602879796196,"ts":1795341600000}
//
// id is "<seed>-<sequence>" (unique for a seed, sequences from 1); user is
// "user-<rank>" with ranks drawn from a Zipf distribution over Users users
// (user-0 the most frequent); campaign is drawn from the budgets by weight;
// score is uniform in [0, 1); ts is the event time in Unix milliseconds (a
// JSON integer: compact and cheap to parse).
//
// The Generator is deterministic: the same Config and the same times give
// the same events. It knows nothing of Kafka; Run produces its events.
package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultUsers = 1000
	DefaultSkew  = 1.1
)

// ErrConfig is wrapped by the errors New and ParseBudgets return.
var ErrConfig = errors.New("invalid load generator config")

// Budget is a campaign name and its relative weight.
type Budget struct {
	Name   string
	Weight float64 // positive and finite
}

// Config describes the events of a Generator.
type Config struct {
	// Seed makes the sequence of events reproducible and prefixes the ids.
	Seed uint64
	// Users is how many distinct users events are about. Default 1000.
	Users int
	// Skew is the Zipf exponent s (> 1) of the users' popularity: user
	// rank k has weight 1/(1+k)^s. Default 1.1.
	Skew float64
	// Budgets are the campaigns to draw from, by weight. Required unless
	// Spread has budgets.
	Budgets []Budget
	// Spread adds many budgets drawn by rank (Zipf or uniform). Optional.
	Spread Spread
}

// Spread is a set of many budgets (light campaigns), drawn by rank: rank
// k of Count (k = 0 the most frequent) with weight 1/(1+k)^Skew, or all
// alike when Skew is 0. Its budgets are named SpreadName(Prefix, k,
// Count).
type Spread struct {
	// Count is the number of budgets; 0 means none.
	Count int
	// Prefix starts every name. Default "spread-".
	Prefix string
	// Skew is the Zipf exponent s (> 1), or 0 for a uniform draw.
	Skew float64
	// Weight is the spread's weight against Config.Budgets' weights: its
	// events are Weight/(Weight + their sum) of all. Default: their sum
	// (half of the events), or 1 with no other budget.
	Weight float64
}

// DefaultSpreadPrefix is the default of Spread.Prefix.
const DefaultSpreadPrefix = "spread-"

// SpreadName returns the name of rank k of a spread of count budgets:
// prefix and k zero-padded to the width of count-1 ("light-00042").
func SpreadName(prefix string, k, count int) string {
	w := len(strconv.Itoa(max(count-1, 0)))
	s := strconv.Itoa(k)
	if len(s) < w {
		s = strings.Repeat("0", w-len(s)) + s
	}
	return prefix + s
}

// Event is one synthetic event.
type Event struct {
	ID       string    `json:"id"`
	User     string    `json:"user"`
	Campaign string    `json:"campaign"`
	Score    float64   `json:"score"`
	Time     time.Time `json:"-"` // encoded as "ts", Unix milliseconds
}

// Generator makes events. It is not safe for concurrent use.
type Generator struct {
	seed     uint64
	seq      uint64
	rng      *rand.Rand
	zipf     *rand.Zipf
	users    []string // "user-<rank>", built once
	names    []string
	cumul    []float64 // cumulative weights
	idPrefix string
	spread   []string   // the spread's names, by rank
	sprZipf  *rand.Zipf // nil: uniform
	sprFrom  float64    // weights from here up draw from the spread
}

// New returns a generator for cfg, after applying its defaults.
func New(cfg Config) (*Generator, error) {
	if cfg.Users == 0 {
		cfg.Users = DefaultUsers
	}
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.Users < 1 {
		return nil, fmt.Errorf("%w: users must be at least 1, got %d", ErrConfig, cfg.Users)
	}
	if !(cfg.Skew > 1) || math.IsInf(cfg.Skew, 0) {
		return nil, fmt.Errorf("%w: skew must be a finite number above 1, got %v", ErrConfig, cfg.Skew)
	}
	if len(cfg.Budgets) == 0 && cfg.Spread.Count == 0 {
		return nil, fmt.Errorf("%w: at least one budget is required", ErrConfig)
	}
	g := &Generator{seed: cfg.Seed, idPrefix: strconv.FormatUint(cfg.Seed, 10) + "-"}
	g.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	g.zipf = rand.NewZipf(g.rng, cfg.Skew, 1, uint64(cfg.Users-1))
	g.users = make([]string, cfg.Users)
	for i := range g.users {
		g.users[i] = "user-" + strconv.Itoa(i)
	}
	var total float64
	for i, b := range cfg.Budgets {
		if b.Name == "" {
			return nil, fmt.Errorf("%w: budget %d has no name", ErrConfig, i)
		}
		if !(b.Weight > 0) || math.IsInf(b.Weight, 0) {
			return nil, fmt.Errorf("%w: budget %q: weight must be positive and finite, got %v", ErrConfig, b.Name, b.Weight)
		}
		total += b.Weight
		g.names = append(g.names, b.Name)
		g.cumul = append(g.cumul, total)
	}
	if err := g.setSpread(cfg.Spread, total); err != nil {
		return nil, err
	}
	return g, nil
}

// setSpread prepares the spread's draw above the named budgets' total
// weight.
func (g *Generator) setSpread(sp Spread, total float64) error {
	switch {
	case sp.Count == 0:
		return nil
	case sp.Count < 0:
		return fmt.Errorf("%w: spread count must be at least 0, got %d", ErrConfig, sp.Count)
	case sp.Skew != 0 && (!(sp.Skew > 1) || math.IsInf(sp.Skew, 0)):
		return fmt.Errorf("%w: spread skew must be 0 (uniform) or a finite number above 1, got %v", ErrConfig, sp.Skew)
	case sp.Weight < 0 || math.IsNaN(sp.Weight) || math.IsInf(sp.Weight, 0):
		return fmt.Errorf("%w: spread weight must be positive and finite, got %v", ErrConfig, sp.Weight)
	}
	if sp.Prefix == "" {
		sp.Prefix = DefaultSpreadPrefix
	}
	if sp.Weight == 0 {
		sp.Weight = max(total, 1)
	}
	g.spread = make([]string, sp.Count)
	for k := range g.spread {
		g.spread[k] = SpreadName(sp.Prefix, k, sp.Count)
	}
	if sp.Skew > 1 && sp.Count > 1 {
		g.sprZipf = rand.NewZipf(g.rng, sp.Skew, 1, uint64(sp.Count-1))
	}
	g.sprFrom = total
	g.cumul = append(g.cumul, total+sp.Weight)
	return nil
}

// SpreadShares returns the share of the events that each rank of a
// spread of count budgets and exponent skew receives within the spread
// (uniform for skew 0): 1/(1+k)^skew over the sum of all ranks' weights.
func SpreadShares(count int, skew float64) []float64 {
	out := make([]float64, count)
	var sum float64
	for k := range out {
		out[k] = 1
		if skew != 0 {
			out[k] = math.Pow(1+float64(k), -skew)
		}
		sum += out[k]
	}
	for k := range out {
		out[k] /= sum
	}
	return out
}

// Next returns the next event, timed now.
func (g *Generator) Next(now time.Time) Event {
	g.seq++
	user := g.users[g.zipf.Uint64()]
	return Event{
		ID:       g.idPrefix + strconv.FormatUint(g.seq, 10),
		User:     user,
		Campaign: g.campaign(),
		Score:    g.rng.Float64(),
		Time:     now,
	}
}

// campaign draws the event's campaign: a named budget by weight, or a
// spread budget by rank.
func (g *Generator) campaign() string {
	c := g.pick()
	if c < len(g.names) {
		return g.names[c]
	}
	if g.sprZipf != nil {
		return g.spread[g.sprZipf.Uint64()]
	}
	return g.spread[g.rng.IntN(len(g.spread))]
}

func (g *Generator) pick() int {
	if len(g.cumul) == 1 {
		return 0
	}
	x := g.rng.Float64() * g.cumul[len(g.cumul)-1]
	i := sort.SearchFloat64s(g.cumul, x)
	if i < len(g.cumul) && g.cumul[i] == x {
		i++ // x is the upper end of budget i: it belongs to the next
	}
	return min(i, len(g.cumul)-1)
}

// AppendJSON appends the event as one JSON object to dst.
func (e *Event) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, e.ID)
	dst = append(dst, `,"user":`...)
	dst = appendString(dst, e.User)
	dst = append(dst, `,"campaign":`...)
	dst = appendString(dst, e.Campaign)
	dst = append(dst, `,"score":`...)
	dst = strconv.AppendFloat(dst, e.Score, 'g', -1, 64)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, e.Time.UnixMilli(), 10)
	return append(dst, '}')
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	// Printable ASCII: Go quoting escapes only '"' and '\', as JSON does.
	return strconv.AppendQuote(dst, s)
}

// ParseBudgets reads a budget list: comma-separated names, each optionally
// followed by ":weight" ("a,b,c" is uniform; "a:3,b:1" draws a three times
// as often as b). A name without a weight has weight 1.
func ParseBudgets(s string) ([]Budget, error) {
	var out []Budget
	seen := make(map[string]bool)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%w: empty budget name in %q", ErrConfig, s)
		}
		b := Budget{Name: part, Weight: 1}
		if name, w, ok := strings.Cut(part, ":"); ok {
			f, err := strconv.ParseFloat(w, 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: budget %q: weight %q must be a positive number", ErrConfig, name, w)
			}
			b = Budget{Name: strings.TrimSpace(name), Weight: f}
			if b.Name == "" {
				return nil, fmt.Errorf("%w: empty budget name in %q", ErrConfig, s)
			}
		}
		if seen[b.Name] {
			return nil, fmt.Errorf("%w: budget %q listed twice", ErrConfig, b.Name)
		}
		seen[b.Name] = true
		out = append(out, b)
	}
	return out, nil
}
