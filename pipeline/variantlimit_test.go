package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// TestVariantLimitStage: events of the limited variant (red) pass while its
// lane admits them, then carry the variant-limited header and go to the
// output topic (fallback output) or are rejected by the limit's budget
// (fallback rejected); blue, unlimited, is untouched.
func TestVariantLimitStage(t *testing.T) {
	for _, fb := range []string{splitter.FallbackOutput, splitter.FallbackRejected} {
		dec := newTestDecoder(t, decode.KeyPath("user"))
		limit := VariantLimit{Layer: "ui", Experiment: "color", Variant: "red", Budget: splitter.LimitBudget("ui", "color", "red"), Fallback: fb}
		p, err := Standard(Spec{Decoder: dec, Splitter: testSplitter(t), Router: testRouter, VariantLimits: []VariantLimit{limit}})
		if err != nil {
			t.Fatal(err)
		}
		lane := &fakeDecider{every: 2, budget: limit.Budget} // admits every 2nd red event
		part := NewPartition("in", 0, 1)
		spring := &fakeDecider{every: 1}
		part.SetLanes(func(b string, _ time.Time) Decider {
			if b == "spring" {
				return spring
			}
			return nil
		}, func(b string, _ time.Time) Decider {
			if b == limit.Budget {
				return lane
			}
			return nil
		})
		c, err := p.Build(part)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for i := range 400 {
			e := NewEvent(&kgo.Record{Topic: "in", Value: []byte(`{"budget":"spring","user":"` + fmt.Sprintf("user-%d", i) + `"}`)}, time.Unix(1, 0))
			o := c.Run(e)
			r := OutputRecord(e, o, false)
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
			case fb == splitter.FallbackRejected && (o != OutcomeReject || e.Topic != "rejected" || e.RejectedBy != limit.Budget || e.RejectReason != flow.ReasonPaced.String() || !e.Verdict.Pass):
				t.Fatalf("%s: limited red event: %v by %q for %q (verdict %+v)", fb, o, e.RejectedBy, e.RejectReason, e.Verdict)
			}
			counts[v+"/"+fmt.Sprintf("%v", limited)]++
		}
		if counts["red/true"] == 0 || counts["red/true"] != counts["red/false"] || counts["blue/false"] == 0 {
			t.Fatalf("%s: counts %v", fb, counts)
		}
	}
}
