package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	good := []struct {
		in     string
		count  int64
		period time.Duration
	}{
		{"10/1h", 10, time.Hour},
		{"3/h", 3, time.Hour},
		{" 5 / 30m ", 5, 30 * time.Minute},
		{"1/day", 1, 24 * time.Hour},
		{"100/1s", 100, time.Second},
		{"7/1h30m", 7, 90 * time.Minute},
	}
	for _, g := range good {
		c, p, err := ParseRate(g.in)
		if err != nil || c != g.count || p != g.period {
			t.Errorf("ParseRate(%q) = %d, %v, %v; want %d, %v", g.in, c, p, err, g.count, g.period)
		}
	}
	bad := []struct{ in, reason string }{
		{"10", `want "count/period"`},
		{"ten/1h", "not a whole number"},
		{"1.5/1h", "not a whole number"},
		{"0/1h", "count must be positive"},
		{"-3/1h", "count must be positive"},
		{"3/hour", "not a duration"},
		{"3/-1h", "period must be positive"},
		{"3/0s", "period must be positive"},
	}
	for _, b := range bad {
		_, _, err := ParseRate(b.in)
		if !errors.Is(err, ErrRate) || !strings.Contains(err.Error(), b.reason) {
			t.Errorf("ParseRate(%q) = %v, want ErrRate with %q", b.in, err, b.reason)
		}
	}
}

func TestParseCaps(t *testing.T) {
	c, err := Parse([]byte(minimal + `caps:
  - name: per-user
    key: user.id
    burst: 2
    rate: 3/1h
    quantity: items
  - {name: per-device, rate: 100/1d}
`))
	if err == nil || !strings.Contains(err.Error(), "caps[1].rate") {
		t.Fatalf("1d is not a Go duration; got %v", err)
	}
	c, err = Parse([]byte(minimal + `caps:
  - name: per-user
    key: user.id
    burst: 2
    rate: 3/1h
    quantity: items
  - {name: per-device, rate: 100/day}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Caps) != 2 || c.Caps[0] != (Cap{Name: "per-user", Key: "user.id", Burst: 2, Rate: "3/1h", Quantity: "items"}) ||
		c.Caps[1] != (Cap{Name: "per-device", Rate: "100/day"}) {
		t.Fatalf("caps = %+v", c.Caps)
	}
	if c.Topics.Caps != "throttler.caps" {
		t.Fatalf("default changelog topic = %q", c.Topics.Caps)
	}
}

func TestCapProblems(t *testing.T) {
	cases := []struct {
		name string
		caps string
		want []wantLine
	}{
		{"no rate", "  - name: u\n", []wantLine{{"caps[0].rate", "is required, as", 12}}},
		{"bad rate", "  - name: u\n    rate: 3 per hour\n", []wantLine{{"caps[0].rate", `want "count/period"`, 13}}},
		{"zero count", "  - name: u\n    rate: 0/1h\n", []wantLine{{"caps[0].rate", "count must be positive", 13}}},
		{"negative burst", "  - name: u\n    burst: -1\n    rate: 1/1h\n", []wantLine{{"caps[0].burst", "at least 0", 13}}},
		{"burst not a number", "  - name: u\n    burst: lots\n    rate: 1/1h\n", []wantLine{{"caps[0].burst", "want an integer", 13}}},
		{"too fast", "  - name: u\n    rate: 2000000000/1s\n", []wantLine{{"caps[0].rate", "more than one per nanosecond", 13}}},
		{"window too long", "  - name: u\n    burst: 1000000000\n    rate: 1/24h\n", []wantLine{{"caps[0].burst", "longest supported window", 13}}},
		{"no name", "  - rate: 1/1h\n", []wantLine{{"caps[0].name", "is required", 12}}},
		{"duplicate", "  - {name: u, rate: 1/1h}\n  - {name: u, rate: 2/1h}\n", []wantLine{{"caps[1].name", "also the name of caps[0]", 13}}},
		{"budget name", "  - {name: a, rate: 1/1h}\n", []wantLine{{"caps[0].name", "also the name of budgets[0]", 12}}},
		{"bad paths", "  - {name: u, rate: 1/1h, key: a..b, quantity: 'q r'}\n", []wantLine{
			{"caps[0].key", "empty segment", 12}, {"caps[0].quantity", "white space", 12}}},
		{"unknown field", "  - {name: u, rate: 1/1h, per: user}\n", []wantLine{{"caps[0].per", "unknown field", 12}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal + "caps:\n" + tc.caps))
			ps := checkProblems(t, err, wantsOf(tc.want)...)
			for i, w := range tc.want {
				if i < len(ps) && ps[i].Line != w.line {
					t.Errorf("%s: line %d, want %d", ps[i].Path, ps[i].Line, w.line)
				}
			}
		})
	}
	// The changelog topic is an internal topic: it may not be an input.
	_, err := Parse([]byte(minimal + "caps:\n  - {name: u, rate: 1/1h}\n" + "group: g\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(strings.Replace(minimal, "  output: passed\n", "  output: passed\n  caps: events\n", 1) +
		"caps:\n  - {name: u, rate: 1/1h}\n"))
	checkProblems(t, err, want{"topics.caps", "also topics.input[0]"})
}

func wantsOf(ws []wantLine) []want {
	out := make([]want, len(ws))
	for i, w := range ws {
		out[i] = want{w.path, w.reason}
	}
	return out
}
