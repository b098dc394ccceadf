package pipeline

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/splitter"
)

// TestAssignmentHeadersNameTheScheme checks that each assignment of a
// passed event travels as layer, experiment, variant and scheme headers,
// the n-th of each belonging together.
func TestAssignmentHeadersNameTheScheme(t *testing.T) {
	sp, err := splitter.New([]splitter.Layer{
		{Name: "ui", Experiments: []splitter.Experiment{{Name: "color", Allocation: 100,
			Variants: []splitter.Variant{{Name: "red", Weight: 1, Topic: "out-red"}}}}},
		{Name: "flags", Experiments: []splitter.Experiment{{Name: "Feature.Variants.B", Hash: splitter.SchemeUnleash,
			Variants: []splitter.Variant{{Name: "variant1", Weight: 1, Topic: "out-v1"}, {Name: "variant2", Weight: 1, Topic: "out-v2"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEvent(&kgo.Record{Topic: "in"}, time.Unix(1, 0))
	e.Assignments = sp.Assign([]byte("2"), e.Assignments) // Unleash's client specification: variant2
	e.Topic = "out-red"
	r := OutputRecord(e, OutcomePass, false)
	var got []string
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderLayer, HeaderExperiment, HeaderVariant, HeaderScheme:
			got = append(got, h.Key+"="+string(h.Value))
		}
	}
	want := []string{
		"throttler-layer=ui", "throttler-experiment=color", "throttler-variant=red", "throttler-scheme=throttler",
		"throttler-layer=flags", "throttler-experiment=Feature.Variants.B", "throttler-variant=variant2", "throttler-scheme=unleash",
	}
	if len(got) != len(want) {
		t.Fatalf("headers %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("header %d = %s, want %s", i, got[i], want[i])
		}
	}
}
