package splitter

import "time"

// VariantLimit is a budget of its own for one variant: at most Target
// events per Period, or Target events spread over the window from Begin to
// End. The splitter only carries it; the worker (package consumer) turns it
// into a flow budget, shared by the whole cluster like any other, and sends
// the variant's events over it to Fallback instead of the variant's topic.
type VariantLimit struct {
	// Target is the number of events the variant may receive per period or
	// per window. Positive and finite.
	Target float64 `yaml:"target"`
	// Period makes a per-period limit (periods aligned to the Unix epoch).
	Period time.Duration `yaml:"period,omitempty"`
	// Begin and End make a window limit; set both, or Period.
	Begin time.Time `yaml:"begin,omitempty"`
	End   time.Time `yaml:"end,omitempty"`
	// Fallback is where events over the limit go: "output" (the worker's
	// output topic) or "rejected" (the rejected topic, or dropped and
	// counted when there is none). Empty means the experiment's Fallback,
	// and "output" when that is empty too.
	Fallback string `yaml:"fallback,omitempty"`
}

// Fallbacks of a VariantLimit.
const (
	FallbackOutput   = "output"
	FallbackRejected = "rejected"
)

// LimitBudget is the name of the flow budget of a variant's limit:
// "variant:<layer>/<experiment>/<variant>". Budget names with the prefix
// "variant:" are reserved for these.
func LimitBudget(layer, experiment, variant string) string {
	return LimitPrefix + layer + "/" + experiment + "/" + variant
}

// LimitPrefix starts the name of every variant limit's budget.
const LimitPrefix = "variant:"
