package splitter

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func validLayers() []Layer {
	return []Layer{
		{Name: "ranking", Experiments: []Experiment{
			{Name: "new-ranker", Allocation: 20, Variants: []Variant{
				{Name: "control", Weight: 50, Topic: "rank-control"},
				{Name: "treatment", Weight: 50, Topic: "rank-treatment"},
			}},
			{Name: "tiny", Start: 30, Allocation: 0.01, Variants: []Variant{
				{Name: "only", Weight: 1, Topic: "tiny"},
			}},
			{Name: "rest", Start: 30.01, Allocation: 69.99, Variants: []Variant{
				{Name: "a", Weight: 9999, Topic: "rest-a"},
				{Name: "b", Weight: 1, Topic: "rest-b"},
			}},
		}},
		{Name: "ui", Salt: "ui-v2", Experiments: []Experiment{
			{Name: "new-ranker", Allocation: 100, Variants: []Variant{ // same name, other layer: fine
				{Name: "control", Weight: 0.5, Topic: "rank-control"}, // shared topic: fine
			}},
		}},
	}
}

func TestValidateAcceptsValid(t *testing.T) {
	if ps := Validate(validLayers()); ps != nil {
		t.Fatalf("Validate(valid) = %v", ps)
	}
	if _, err := New(validLayers()); err != nil {
		t.Fatalf("New(valid) = %v", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	v := func(name string, w float64, topic string) Variant {
		return Variant{Name: name, Weight: w, Topic: topic}
	}
	layers := []Layer{
		{Name: "", Experiments: []Experiment{ // 0
			{Name: "e", Allocation: 10, Variants: []Variant{v("a", 1, "t")}},
		}},
		{Name: "dup", Salt: "shared", Experiments: nil}, // 1
		{Name: "dup", Salt: "shared", Experiments: []Experiment{ // 2
			{Name: " ", Allocation: 0, Start: -1, Variants: []Variant{v("a", 1, "t")}},
			{Name: "x", Allocation: 101, Start: 100, Variants: nil},
			{Name: "x", Allocation: math.NaN(), Start: 0.005, Variants: []Variant{v("a", 1, "t")}},
			{Name: "y", Allocation: 12.345, Variants: []Variant{v("a", 1, "t")}},
		}},
		{Name: "shared", Experiments: []Experiment{ // 3: salt defaults to "shared"
			{Name: "p", Start: 90, Allocation: 20, Variants: []Variant{v("a", 1, "t")}},
			{Name: "q", Allocation: 50, Variants: []Variant{
				v("", 1, "t"), v("b", 0, ""), v("b", -1, " "), v("c", math.NaN(), "t"), v("d", math.Inf(1), "t"),
			}},
			{Name: "r", Start: 40, Allocation: 30, Variants: []Variant{v("big", 1, "t"), v("small", 1e-6, "t")}},
			{Name: "s", Start: 45, Allocation: 10, Variants: []Variant{v("a", 1e308, "t"), v("b", 1e308, "t")}},
		}},
	}
	want := []struct{ path, reason string }{
		{"layers[0].name", "must not be empty"},
		{"layers[1].experiments", "must have at least one experiment"},
		{"layers[2].name", `"dup" is also the name of layers[1]`},
		{"layers[2].salt", `salt "shared" is also the salt of layers[1]`},
		{"layers[2].experiments[0].name", "must not be empty"},
		{"layers[2].experiments[0].allocation", "more than 0 and at most 100, got 0"},
		{"layers[2].experiments[0].start", "at least 0 and less than 100, got -1"},
		{"layers[2].experiments[1].allocation", "got 101"},
		{"layers[2].experiments[1].start", "got 100"},
		{"layers[2].experiments[1].variants", "must have at least one variant"},
		{"layers[2].experiments[2].name", `"x" is also the name of experiments[1]`},
		{"layers[2].experiments[2].allocation", "got NaN"},
		{"layers[2].experiments[2].start", "multiple of 0.01"},
		{"layers[2].experiments[3].allocation", "multiple of 0.01 (one bucket of 10000), got 12.345"},
		{"layers[3].salt", `salt "shared" (the layer name, as salt is empty) is also the salt of layers[1]`},
		{"layers[3].experiments[0]", "start 90% + allocation 20% ends at 110%, past the end of the layer"},
		{"layers[3].experiments[1].variants[0].name", "must not be empty"},
		{"layers[3].experiments[1].variants[1].weight", "positive and finite, got 0"},
		{"layers[3].experiments[1].variants[1].topic", "must not be empty"},
		{"layers[3].experiments[1].variants[2].name", `"b" is also the name of variants[1]`},
		{"layers[3].experiments[1].variants[2].weight", "got -1"},
		{"layers[3].experiments[1].variants[2].topic", "must not be empty"},
		{"layers[3].experiments[1].variants[3].weight", "got NaN"},
		{"layers[3].experiments[1].variants[4].weight", "got +Inf"},
		{"layers[3].experiments[2].variants[1].weight", "1e-06 of a total of 1.000001 rounds to 0 of 10000 buckets"},
		{"layers[3].experiments[3].variants", "weights sum to infinity"},
		{"layers[3].experiments[2]", `range [40%, 70%) overlaps experiments[1] "q" range [0%, 50%)`},
		{"layers[3].experiments[3]", `range [45%, 55%) overlaps experiments[1] "q" range [0%, 50%)`},
		{"layers[3].experiments[3]", `range [45%, 55%) overlaps experiments[2] "r" range [40%, 70%)`},
		{"layers[3].experiments", "allocations sum to 110%, more than 100%"},
	}
	ps := Validate(layers)
	for i := 0; i < len(ps) || i < len(want); i++ {
		switch {
		case i >= len(ps):
			t.Errorf("missing problem %s: ...%s...", want[i].path, want[i].reason)
		case i >= len(want):
			t.Errorf("unexpected problem %v", ps[i])
		case ps[i].Path != want[i].path || !strings.Contains(ps[i].Reason, want[i].reason):
			t.Errorf("problem %d = %v, want %s: ...%s...", i, ps[i], want[i].path, want[i].reason)
		}
	}

	_, err := New(layers)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New: errors.Is(%v, ErrInvalidConfig) = false", err)
	}
	var got Problems
	if !errors.As(err, &got) || len(got) != len(want) {
		t.Errorf("New: errors.As(err, *Problems) gives %d problems, want %d", len(got), len(want))
	}
	var p *Problem
	if !errors.As(err, &p) || p.Path != "layers[0].name" {
		t.Errorf("New: errors.As(err, **Problem) = %v, want the first problem", p)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "invalid splitter config: layers[0].name: must not be empty; layers[1].experiments: ") {
		t.Errorf("New: error message %q", msg)
	}
}

func TestValidateNameLength(t *testing.T) {
	long := strings.Repeat("n", MaxNameBytes+1)
	ok := strings.Repeat("n", MaxNameBytes)
	layers := []Layer{{Name: long, Experiments: []Experiment{
		{Name: ok, Allocation: 50, Variants: []Variant{{Name: long, Weight: 1, Topic: "t"}, {Name: ok, Weight: 1, Topic: "t"}}},
	}}}
	ps := Validate(layers)
	want := []string{"layers[0].name", "layers[0].experiments[0].variants[0].name"}
	if len(ps) != len(want) {
		t.Fatalf("problems %v, want on %v", ps, want)
	}
	for i, w := range want {
		if ps[i].Path != w || !strings.Contains(ps[i].Reason, "is 257 bytes long, more than 256") {
			t.Errorf("problem %d = %v, want %s: name too long", i, ps[i], w)
		}
	}
}
