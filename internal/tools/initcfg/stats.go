package initcfg

import (
	"math"
	"slices"
	"time"
)

// PathStats is what the sample shows of one field path.
type PathStats struct {
	Path string `json:"path"`
	// Present counts the events with a value at the path (not null).
	Present int `json:"present"`
	// Strings, Numbers, Bools and Nested count the values by kind.
	Strings int `json:"strings"`
	Numbers int `json:"numbers"`
	Bools   int `json:"bools"`
	Nested  int `json:"nested"`
	// Distinct counts the distinct values (by their text).
	Distinct int `json:"distinct"`
	// Examples are the first distinct values seen, at most three.
	Examples []string `json:"examples"`
	// Min and Max bound the numbers; Integers says they are all whole.
	Min      float64 `json:"min,omitempty"`
	Max      float64 `json:"max,omitempty"`
	Integers bool    `json:"integers,omitempty"`
	// Millis, Seconds and RFC3339 count the values that read as times
	// near the sample's instant: numbers as Unix milliseconds (what the
	// worker reads), numbers as Unix seconds (which it would misread),
	// strings as RFC 3339.
	Millis  int `json:"unix_millis,omitempty"`
	Seconds int `json:"unix_seconds,omitempty"`
	RFC3339 int `json:"rfc3339,omitempty"`
	// KeyMatches counts the events whose record key is this value.
	KeyMatches int `json:"key_matches,omitempty"`
	// First and Last bound the times of the values that read as times.
	First, Last time.Time `json:"-"`

	counts map[string]int // by value text: the top values
}

// Near bounds the times that count as "near" the sample's instant: a topic
// is sampled at its end, so its events' times are recent.
const (
	NearPast   = 90 * 24 * time.Hour
	NearFuture = 24 * time.Hour
)

// Kind returns the kind of most of the values.
func (s *PathStats) Kind() Kind {
	k, n := Null, 0
	for _, c := range []struct {
		k Kind
		n int
	}{{String, s.Strings}, {Number, s.Numbers}, {Bool, s.Bools}, {Nested, s.Nested}} {
		if c.n > n {
			k, n = c.k, c.n
		}
	}
	return k
}

// Times returns how many values read as times the worker reads right.
func (s *PathStats) Times() int { return s.Millis + s.RFC3339 }

// Top returns the most frequent values and their counts, most frequent
// first (ties by value), at most n.
func (s *PathStats) Top(n int) []ValueCount {
	out := make([]ValueCount, 0, len(s.counts))
	for v, c := range s.counts {
		out = append(out, ValueCount{v, c})
	}
	slices.SortFunc(out, func(a, b ValueCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if a.Value < b.Value {
			return -1
		}
		return 1
	})
	return out[:min(n, len(out))]
}

// ValueCount is a value and how many events hold it.
type ValueCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// collect computes the stats of every path of events, in the order paths
// were first seen (order, when given, first).
func collect(events []Event, order []string, now time.Time) []*PathStats {
	byPath := map[string]*PathStats{}
	var out []*PathStats
	get := func(p string) *PathStats {
		s := byPath[p]
		if s == nil {
			s = &PathStats{Path: p, Integers: true, Min: math.Inf(1), Max: math.Inf(-1), counts: map[string]int{}}
			byPath[p] = s
			out = append(out, s)
		}
		return s
	}
	for _, p := range order {
		get(p)
	}
	for _, e := range events {
		for _, f := range e.Fields {
			s := get(f.Path)
			s.add(f.Value, e.Key, now)
		}
	}
	for _, s := range out {
		s.Distinct = len(s.counts)
		if s.Numbers == 0 {
			s.Min, s.Max, s.Integers = 0, 0, false
		}
	}
	return out
}

// add counts one value; key is the record key of its event.
func (s *PathStats) add(v Value, key string, now time.Time) {
	if v.Kind == Null {
		return
	}
	s.Present++
	if v.Kind != Nested {
		if _, seen := s.counts[v.Text]; !seen && len(s.Examples) < 3 {
			s.Examples = append(s.Examples, v.Text)
		}
		s.counts[v.Text]++
		if key != "" && key == v.Text {
			s.KeyMatches++
		}
	}
	switch v.Kind {
	case String:
		s.Strings++
		if t, err := time.Parse(time.RFC3339Nano, v.Text); err == nil && near(t, now) {
			s.RFC3339++
			s.span(t)
		}
	case Number:
		s.Numbers++
		s.Min, s.Max = min(s.Min, v.Num), max(s.Max, v.Num)
		s.Integers = s.Integers && v.Num == math.Trunc(v.Num)
		if t := time.UnixMilli(int64(v.Num)); v.Num > 0 && near(t, now) {
			s.Millis++
			s.span(t)
		} else if v.Num > 0 && v.Num < math.MaxInt64/1e3 && near(time.Unix(int64(v.Num), 0), now) {
			s.Seconds++
		}
	case Bool:
		s.Bools++
	case Nested:
		s.Nested++
	}
}

func (s *PathStats) span(t time.Time) {
	if s.First.IsZero() || t.Before(s.First) {
		s.First = t
	}
	if t.After(s.Last) {
		s.Last = t
	}
}

func near(t, now time.Time) bool {
	return !t.Before(now.Add(-NearPast)) && !t.After(now.Add(NearFuture))
}
