package consumer

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// TestVariantLimitStage: events of the limited variant (red) pass while its
// lane admits them, then carry the variant-limited header and go to the
// output topic (fallback output) or are rejected by the limit's budget
// (fallback rejected); blue, unlimited, is untouched.
func TestVariantLimitStage(t *testing.T) {
	for _, fb := range []string{splitter.FallbackOutput, splitter.FallbackRejected} {
		dec := newTestDecoder(t, KeyPath("user"))
		p := StandardPipeline(dec, testSplitter(t), "out")
		limit := VariantLimit{Layer: "ui", Experiment: "color", Variant: "red", Budget: splitter.LimitBudget("ui", "color", "red"), Fallback: fb}
		p.Use(Stage{StageVariantLimit, VariantLimitStage([]VariantLimit{limit}, "out")})
		h := p.Handler()
		lane := &fakeDecider{every: 2, budget: limit.Budget} // admits every 2nd red event
		counts := map[string]int{}
		for i := range 400 {
			e := NewEvent(&kgo.Record{Topic: "in", Value: []byte(`{"budget":"spring","user":"` + sprintf("user-%d", i) + `"}`)}, time.Unix(1, 0), &fakeDecider{every: 1})
			e.limits = []Decider{lane}
			o := Run(h, e)
			var r *kgo.Record
			if o == OutcomePass {
				r = outputRecord(e, o, e.Topic, false)
			} else {
				r = outputRecord(e, o, "rejected", false)
			}
			lim, limited := HeaderValue(r, HeaderVariantLimited)
			v := e.Assignments[0].Variant
			switch {
			case v == "blue":
				if o != OutcomePass || e.Topic != "out-blue" || limited {
					t.Fatalf("%s: blue event: %v to %q, limited %v", fb, o, e.Topic, limited)
				}
			case !limited:
				if o != OutcomePass || e.Topic != "out-red" {
					t.Fatalf("%s: admitted red event: %v to %q", fb, o, e.Topic)
				}
			case lim != "ui/color/red":
				t.Fatalf("%s: header %q", fb, lim)
			case fb == splitter.FallbackOutput && (o != OutcomePass || e.Topic != "out"):
				t.Fatalf("%s: limited red event: %v to %q", fb, o, e.Topic)
			case fb == splitter.FallbackRejected && (o != OutcomeReject || e.RejectedBy != limit.Budget || e.RejectReason != flow.ReasonPaced.String() || !e.Verdict.Pass):
				t.Fatalf("%s: limited red event: %v by %q for %q (verdict %+v)", fb, o, e.RejectedBy, e.RejectReason, e.Verdict)
			}
			counts[v+"/"+sprintf("%v", limited)]++
		}
		if counts["red/true"] == 0 || counts["red/true"] != counts["red/false"] || counts["blue/false"] == 0 {
			t.Fatalf("%s: counts %v", fb, counts)
		}
	}
}
