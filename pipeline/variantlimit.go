package pipeline

import "github.com/throttler/throttler/splitter"

// HeaderVariantLimited is added to an event whose variant's limit refused
// it; its value is "layer/experiment/variant". The event then goes to the
// output topic or, by the limit's fallback, to the rejected topic.
const HeaderVariantLimited = "throttler-variant-limited"

// StageVariantLimit names the variant-limit stage, which follows split.
const StageVariantLimit = "variant-limit"

// VariantLimit sends the events over a variant's own budget away from the
// variant's topic (see VariantLimitStage).
type VariantLimit struct {
	Layer, Experiment, Variant string
	// Budget is the flow budget counting the variant's events; it must be
	// in the worker's flow tree (splitter.LimitBudget names it).
	Budget string
	// Fallback is splitter.FallbackOutput (the output topic) or
	// splitter.FallbackRejected (the rejected topic, or dropped and
	// counted).
	Fallback string
}

// variantKey identifies a variant.
type variantKey struct{ layer, experiment, variant string }

// checkVariantLimits checks the limits' fallbacks.
func checkVariantLimits(limits []VariantLimit) error {
	for _, l := range limits {
		if l.Fallback != splitter.FallbackOutput && l.Fallback != splitter.FallbackRejected {
			return &ConfigError{Option: "WithVariantLimits", Reason: "fallback of variant " + l.Layer + "/" + l.Experiment + "/" + l.Variant + " must be output or rejected, got " + l.Fallback}
		}
	}
	return nil
}

// VariantLimitStage enforces variant limits. It asks the partition's lane
// of the limit's budget (Partition.LaneOf, kept until Version changes) for
// each event routed to a limited variant (the first assignment, which
// picks the topic; see splitter.Route). An event the lane refuses carries
// HeaderVariantLimited and goes to the output topic (Event.VariantLimited),
// or is rejected by the limit's budget when its fallback is "rejected".
// Events outside a window limit's window are refused too.
//
// The lanes are those of flow budgets in the worker's tree, so a limit
// holds cluster-wide as a budget does: each worker paces its partitions'
// share from the counts its peers publish on the stats topic, and the
// counts survive rebalances through the partitions' ledgers.
func VariantLimitStage(limits []VariantLimit) Stage {
	idx := make(map[variantKey]int, len(limits))
	hdr := make([][]byte, len(limits))
	for i, l := range limits {
		idx[variantKey{l.Layer, l.Experiment, l.Variant}] = i
		hdr[i] = []byte(l.Layer + "/" + l.Experiment + "/" + l.Variant)
	}
	return Stage{Name: StageVariantLimit, New: func(part *Partition) (Middleware, error) {
		lanes := make([]Decider, len(limits)) // nil: not looked up since version
		version := part.Version()
		return func(next Handler) Handler {
			if len(limits) == 0 {
				return next
			}
			return func(e *Event) Outcome {
				if len(e.Assignments) == 0 {
					return next(e)
				}
				a := &e.Assignments[0]
				i, ok := idx[variantKey{a.Layer, a.Experiment, a.Variant}]
				if !ok {
					return next(e)
				}
				if v := part.Version(); v != version {
					version = v
					clear(lanes)
				}
				if lanes[i] == nil {
					// Looked up on the limit's first event only: an
					// idle limit keeps no lane open.
					if lanes[i] = part.LaneOf(limits[i].Budget, e.Now); lanes[i] == nil {
						return next(e)
					}
				}
				v := lanes[i].Decide(e.Now, e.Fields.Score)
				if v.Pass {
					return next(e)
				}
				e.AddHeader(HeaderVariantLimited, hdr[i])
				if limits[i].Fallback == splitter.FallbackRejected {
					return e.Reject(limits[i].Budget, v.Reason.String())
				}
				e.VariantLimited = true
				return next(e)
			}
		}, nil
	}}
}
