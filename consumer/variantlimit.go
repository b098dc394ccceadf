package consumer

import (
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// HeaderVariantLimited is added to an event whose variant's limit refused
// it; its value is "layer/experiment/variant". The event then goes to the
// output topic or, by the limit's fallback, to the rejected topic.
const HeaderVariantLimited = "throttler-variant-limited"

// StageVariantLimit names the variant-limit stage, which follows split.
const StageVariantLimit = "variant-limit"

// VariantLimitStage enforces variant limits. It asks the partition's lane
// of the limit's budget for each event routed to a limited variant (the
// first assignment, which picks the topic; see splitter.Route). An event
// the lane refuses carries HeaderVariantLimited and goes to output, or is
// rejected by the limit's budget when its fallback is "rejected". Events
// outside a window limit's window are refused too.
//
// The lanes are those of flow budgets in the worker's tree, so a limit
// holds cluster-wide as a budget does: each worker paces its partitions'
// share from the counts its peers publish on the stats topic, and the
// counts survive rebalances through the checkpoints.
func VariantLimitStage(limits []VariantLimit, output string) Middleware {
	idx := make(map[routeKey]int, len(limits))
	hdr := make([][]byte, len(limits))
	for i, l := range limits {
		idx[routeKey{l.Layer, l.Experiment, l.Variant}] = i
		hdr[i] = []byte(l.Layer + "/" + l.Experiment + "/" + l.Variant)
	}
	return func(next Handler) Handler {
		if len(limits) == 0 {
			return next
		}
		return func(e *Event) Outcome {
			if len(e.Assignments) == 0 {
				return next(e)
			}
			a := &e.Assignments[0]
			i, ok := idx[routeKey{a.Layer, a.Experiment, a.Variant}]
			if !ok || i >= len(e.limits) || e.limits[i] == nil {
				return next(e)
			}
			v := e.limits[i].Decide(e.Now, e.Fields.Score)
			if v.Pass {
				return next(e)
			}
			e.AddHeader(HeaderVariantLimited, hdr[i])
			if limits[i].Fallback == splitter.FallbackRejected {
				return e.Reject(limits[i].Budget, v.Reason.String())
			}
			o := next(e)
			if o == OutcomePass {
				e.Topic = output
			}
			return o
		}
	}
}

// useVariantLimits checks that every variant limit's budget is in the
// tree and adds the variant-limit stage after split.
func (w *Worker) useVariantLimits(p *Pipeline) error {
	for _, l := range w.cfg.variantLimits {
		if _, ok := w.tree.Budget(l.Budget); !ok {
			return &ConfigError{Option: "WithVariantLimits", Reason: "budget " + l.Budget + " of variant " + l.Layer + "/" + l.Experiment + "/" + l.Variant + " is not in the flow tree"}
		}
		if l.Fallback != splitter.FallbackOutput && l.Fallback != splitter.FallbackRejected {
			return &ConfigError{Option: "WithVariantLimits", Reason: "fallback of variant " + l.Layer + "/" + l.Experiment + "/" + l.Variant + " must be output or rejected, got " + l.Fallback}
		}
	}
	if len(w.cfg.variantLimits) > 0 {
		p.Use(Stage{StageVariantLimit, VariantLimitStage(w.cfg.variantLimits, w.cfg.topics.Output)})
	}
	return nil
}

// variantLimitsOf returns the variant limits of a configuration and their
// flow budgets.
func variantLimitsOf(c *config.Config) ([]VariantLimit, []flow.Budget) {
	var limits []VariantLimit
	var budgets []flow.Budget
	for _, l := range c.VariantLimits() {
		limits = append(limits, VariantLimit{Layer: l.Layer, Experiment: l.Experiment, Variant: l.Variant, Budget: l.Budget.Name, Fallback: l.Fallback})
		budgets = append(budgets, l.Budget)
	}
	return limits, budgets
}
