package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/throttler/throttler/flow"
)

// Cap is one per-key frequency cap (flow.Cap, GCRA with redis-cell's
// CL.THROTTLE semantics): every key (a user, say) may take Count per Period
// on average and up to Burst+1 at once. An event over its key's cap is
// rejected with reason "cap"; an event rejected later (by its budget)
// consumes nothing of the cap.
type Cap struct {
	// Name identifies the cap in metrics, logs and the rejected records'
	// headers. Required, unique, and not the name of a budget.
	Name string `yaml:"name"`
	// Key is the JSON path of the capped entity. Default: fields.key (the
	// event's key, itself the record key by default). The input should be
	// keyed by it: see docs/configuration.md, Per-key caps.
	Key string `yaml:"key"`
	// Burst is CL.THROTTLE's max_burst: a key may take Burst+1 at once.
	// At least 0. Default 0.
	Burst int64 `yaml:"burst"`
	// Rate is "count/period": count per period on average, e.g. "10/1h".
	// count is a positive integer; period a Go duration ("1h", "30m",
	// "1h30m"), a bare unit ("h" for "1h"), or "day". Required.
	Rate string `yaml:"rate"`
	// Quantity is the JSON path of the amount an event costs, a whole
	// number at least 0. Default: every event costs 1.
	Quantity string `yaml:"quantity"`
}

// ErrRate is wrapped by the errors of ParseRate.
var ErrRate = errors.New("invalid rate")

// ParseRate parses a cap's rate, "count/period" such as "10/1h" or
// "3/day" (see Cap.Rate). Errors wrap ErrRate.
func ParseRate(s string) (count int64, period time.Duration, err error) {
	bad := func(format string, args ...any) (int64, time.Duration, error) {
		return 0, 0, fmt.Errorf("%w: "+format, append([]any{ErrRate}, args...)...)
	}
	n, p, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad(`want "count/period" such as "10/1h", got %q`, s)
	}
	n, p = strings.TrimSpace(n), strings.TrimSpace(p)
	count, err = strconv.ParseInt(n, 10, 64)
	if err != nil {
		return bad("count %q in %q is not a whole number", n, s)
	}
	if count <= 0 {
		return bad("count must be positive, got %d", count)
	}
	switch p {
	case "ns", "us", "µs", "ms", "s", "m", "h":
		p = "1" + p
	case "day", "d":
		p = "24h"
	}
	period, err = time.ParseDuration(p)
	if err != nil {
		return bad("period %q in %q is not a duration such as 1h, 30m or 10s", p, s)
	}
	if period <= 0 {
		return bad("period must be positive, got %v", period)
	}
	return count, period, nil
}

// capDefaults fills the changelog topic's default name.
func (c *Config) capDefaults() {
	if c.Topics.Caps == "" {
		c.Topics.Caps = c.Group + ".caps"
	}
}

// caps checks: names set, printable, unique, and not budget names; key and
// quantity well-formed paths; burst at least 0; rate "count/period" with a
// positive whole count and a positive period, at most one per nanosecond,
// and a burst window flow.Cap can hold.
func (v *checker) caps(c *Config) {
	// The budgets named like a cap, found through a set of the few caps'
	// names rather than a map of every budget's.
	capNames := make(map[string]bool, len(c.Caps))
	for _, cp := range c.Caps {
		capNames[cp.Name] = true
	}
	budgets := map[string]int{}
	for i, b := range c.Budgets {
		if _, dup := budgets[b.Name]; !dup && capNames[b.Name] {
			budgets[b.Name] = i
		}
	}
	names := make(map[string]int, len(c.Caps))
	for i, cp := range c.Caps {
		p := "caps[" + strconv.Itoa(i) + "]"
		if reason := capNameProblem(cp.Name, names, budgets, v.budgetRef); reason != "" {
			v.add(p+".name", reason)
		} else {
			names[cp.Name] = i
		}
		v.path(p+".key", cp.Key)
		v.path(p+".quantity", cp.Quantity)
		if cp.Burst < 0 {
			v.add(p+".burst", fmt.Sprintf("must be at least 0 (a key may take burst+1 at once), got %d", cp.Burst))
		}
		if cp.Rate == "" {
			v.add(p+".rate", `must be set, as "count/period" such as "10/1h"`)
			continue
		}
		count, period, err := ParseRate(cp.Rate)
		if err != nil {
			v.add(p+".rate", strings.TrimPrefix(err.Error(), ErrRate.Error()+": "))
			continue
		}
		if cp.Burst < 0 {
			continue
		}
		if _, err := flow.NewCap(cp.Burst, count, period); err != nil {
			var ce *flow.CapError
			field := ".rate"
			if errors.As(err, &ce) && ce.Field == "maxBurst" {
				field = ".burst"
			}
			msg := err.Error()
			if ce != nil {
				msg = ce.Reason
			}
			v.add(p+field, msg)
		}
	}
}

// capNameProblem returns what is wrong with a cap's name, or "".
func capNameProblem(name string, caps, budgets map[string]int, budgetRef func(int) string) string {
	if name == "" {
		return "must not be empty"
	}
	if strings.TrimSpace(name) != name || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Sprintf("%q has control characters or leading or trailing space", name)
	}
	if j, dup := caps[name]; dup {
		return fmt.Sprintf("%q is also the name of caps[%d]", name, j)
	}
	if j, dup := budgets[name]; dup {
		return fmt.Sprintf("%q is also the name of %s (rejections name the cap where they name a budget)", name, budgetRef(j))
	}
	return ""
}
