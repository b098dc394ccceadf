package pipeline

import (
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/splitter"
)

// Spec says what the standard pipeline holds.
type Spec struct {
	// Decoder reads the events; required.
	Decoder *decode.Decoder
	// Splitter assigns keys to experiments; nil for none.
	Splitter *splitter.Splitter
	// Router names the destinations.
	Router Router
	// DedupWindow > 0 adds the dedup stage (see DedupStage) after decode.
	DedupWindow int
	// Caps are the per-key caps (NewCaps); nil: the caps stage passes
	// every event on.
	Caps *Caps
	// VariantLimits add the variant-limit stage after split.
	VariantLimits []VariantLimit
}

// Standard assembles the built-in stages: decode → [dedup] → score → caps
// → decide → split → [variant-limit], ending in the route. It is the one
// place that does; a worker's CustomizePipeline then changes the result.
func Standard(s Spec) (*Pipeline, error) {
	if s.Decoder == nil {
		return nil, &ConfigError{Option: "decoder", Reason: "nil decoder"}
	}
	p := New(s.Router, DecodeStage(s.Decoder))
	if s.DedupWindow > 0 {
		if !s.Decoder.HasID() {
			return nil, &ConfigError{Option: "DedupWindow", Reason: "needs the decoder's IDPath"}
		}
		p.Use(DedupStage(s.DedupWindow))
	}
	p.Use(ScoreStage(s.Decoder), s.Caps.Stage(), DecideStage(), SplitStage(s.Splitter))
	if len(s.VariantLimits) > 0 {
		if err := checkVariantLimits(s.VariantLimits); err != nil {
			return nil, err
		}
		p.Use(VariantLimitStage(s.VariantLimits))
	}
	return p, nil
}
