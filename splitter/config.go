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
	// is empty, the name) reshuffles every key of the layer.
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
type Experiment struct {
	// Name identifies the experiment in assignments and seeds its variant
	// hash; unique within its layer.
	Name string `yaml:"name"`
	// Allocation is the share of the layer in the experiment, in percent:
	// more than 0, at most 100, a multiple of 0.01.
	Allocation float64 `yaml:"allocation"`
	// Start is where the experiment's range begins, in percent of the
	// layer: at least 0, a multiple of 0.01, and Start+Allocation at most
	// 100. Default 0.
	Start float64 `yaml:"start,omitempty"`
	// Variants split the experiment's keys by weight.
	Variants []Variant `yaml:"variants"`
	// Fallback is where events over a variant's Limit go when the variant
	// does not say: "output" (the default) or "rejected". Not used by the
	// splitter; see VariantLimit.
	Fallback string `yaml:"fallback,omitempty"`
}

// Variant is one arm of an experiment and the topic its events go to.
type Variant struct {
	// Name identifies the variant in assignments; unique within its
	// experiment.
	Name string `yaml:"name"`
	// Weight is the variant's relative share of the experiment's keys:
	// positive and finite. Weights need not sum to anything in particular
	// (50/50 and 1/1 are the same split); each variant's share is rounded
	// to whole hundredths of a percent and must not round to zero.
	Weight float64 `yaml:"weight"`
	// Topic receives the variant's events.
	Topic string `yaml:"topic"`
	// Limit caps the events the variant's topic receives; nil for none.
	// Not used by the splitter: the worker enforces it.
	Limit *VariantLimit `yaml:"limit,omitempty"`
}
