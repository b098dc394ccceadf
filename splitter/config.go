package splitter

// Buckets is the number of buckets a layer is divided into, and the number
// of buckets an experiment's variant hash maps onto its variant weights.
// One bucket is 0.01% (one basis point) of a layer.
const Buckets = 10_000

// Layer is a set of mutually exclusive experiments: a key falls in at most
// one experiment of a layer. Layers are independent of one another because
// each hashes keys with its own salt; a key may be in one experiment of
// every layer.
//
// The zero Layer is invalid (it has no name and no experiments).
type Layer struct {
	// Name identifies the layer in assignments; unique across layers.
	Name string `yaml:"name"`
	// Salt seeds the layer's bucketing hash. Empty means the layer name.
	// Salts must be distinct across layers. Changing the salt (or, when it
	// is empty, the name) reshuffles every key of the layer. In a layer
	// of statsig experiments it is Statsig's layer salt, required when an
	// experiment has Segments; the other vendor schemes do not use it.
	Salt string `yaml:"salt,omitempty"`
	// Experiments own disjoint bucket ranges of the layer.
	Experiments []Experiment `yaml:"experiments"`
}

// Experiment owns the contiguous bucket range [Start, Start+Allocation) of
// its layer, in percent of the layer, and splits the keys in that range
// between its variants.
//
// Allocation and Start are percentages with a resolution of 0.01 (one
// bucket): 20 means 20% of the layer, 12.5 means 12.5%. Raising Allocation
// extends the range at its end and keeps every key already in the
// experiment in the same variant; lowering it, moving Start, renaming the
// experiment or changing the variant weights does reshuffle keys.
//
// The zero value of Start places the range at the beginning of the layer,
// which is enough for a layer of one experiment. A layer of several
// experiments must give them Starts that keep their ranges apart, with
// room to grow: two ranges that overlap are a validation error, never a
// silent move of keys.
//
// That is the throttler hash scheme. An experiment of a vendor scheme
// (Hash) is placed and split by the vendor's own rules and parameters
// (VendorParams) instead, and leaves Allocation unset.
type Experiment struct {
	// Name identifies the experiment in assignments and seeds its variant
	// hash; unique within its layer.
	Name string `yaml:"name"`
	// Allocation is the share of the layer in the experiment, in percent:
	// more than 0, at most 100, a multiple of 0.01. Throttler scheme only.
	Allocation float64 `yaml:"allocation,omitempty"`
	// Start is where the experiment's range begins, in percent of the
	// layer: at least 0, a multiple of 0.01, and Start+Allocation at most
	// 100. Default 0. In the optimizely scheme, Start is where the first
	// variant's traffic allocation range begins, in percent of the 10,000
	// buckets (the end of a leading range with no variation); the other
	// vendor schemes do not use it.
	Start float64 `yaml:"start,omitempty"`
	// Variants split the experiment's keys by weight.
	Variants []Variant `yaml:"variants"`
	// Fallback is where events over a variant's Limit go when the variant
	// does not say: "output" (the default) or "rejected". Not used by the
	// splitter; see VariantLimit.
	Fallback string `yaml:"fallback,omitempty"`

	// Hash is the experiment's hash scheme: SchemeThrottler (the default,
	// also spelled "") or the scheme of an experiment platform whose SDK
	// the splitter reproduces: SchemeGrowthBook, SchemeOptimizely,
	// SchemeStatsig or SchemeUnleash. Every experiment of a layer uses
	// the same scheme. See VendorParams for the parameters of the vendor
	// schemes, which replace Allocation (and, but for Optimizely, Start).
	Hash         string `yaml:"hash,omitempty"`
	VendorParams `yaml:",inline"`
}

// Namespace is a GrowthBook namespace: the experiment only holds keys
// whose namespace hash falls in [Start, End). Experiments of one layer
// that share a namespace Id and own disjoint ranges of it are mutually
// exclusive, which is how a GrowthBook layer holds several experiments.
type Namespace struct {
	// ID names the namespace; required.
	ID string `yaml:"id"`
	// Start and End bound the namespace range: 0 <= Start < End <= 1.
	Start float64 `yaml:"start"`
	End   float64 `yaml:"end"`
}

// Variant is one arm of an experiment and the topic its events go to.
type Variant struct {
	// Name identifies the variant in assignments; unique within its
	// experiment.
	Name string `yaml:"name"`
	// Weight is the variant's share of the experiment's keys, in the units
	// of the experiment's hash scheme; positive in every scheme.
	//
	// throttler: a relative share, finite. Weights need not sum to
	// anything in particular (50/50 and 1/1 are the same split); each
	// variant's share is rounded to whole hundredths of a percent and
	// must not round to zero.
	//
	// growthbook: GrowthBook's weight, used as given when the weights sum
	// to 0.99..1.01 and replaced by an equal split otherwise, as the SDK
	// does (it never normalises). optimizely: the width of the variant's
	// traffic allocation range, in percent of the 10,000 buckets (a
	// multiple of 0.01); ranges follow one another from Start. statsig:
	// the group's size in percent, a multiple of 0.1 (one of the 1,000
	// user buckets); the sizes sum to 100. unleash: Unleash's integer
	// variant weight; the total is the sum of the weights.
	Weight float64 `yaml:"weight"`
	// Topic receives the variant's events.
	Topic string `yaml:"topic"`
	// Limit caps the events the variant's topic receives; nil for none.
	// Not used by the splitter: the worker enforces it.
	Limit *VariantLimit `yaml:"limit,omitempty"`
}
