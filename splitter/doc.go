// Package splitter assigns keys to A/B experiment variants, and so events
// to the topics of those variants. It returns destinations and knows
// nothing of Kafka: the consumer routes the event.
//
// # Layers, experiments, variants
//
// A Layer divides keys into Buckets (10,000) buckets. Each Experiment of the
// layer owns a contiguous range of them, [Start, Start+Allocation) in
// percent of the layer, and the ranges of one layer are disjoint, so a key
// is in at most one experiment per layer (mutual exclusion). Layers hash
// with different salts, so being in an experiment of one layer says
// nothing about the experiments of another (independence); a key may be in
// one experiment of every layer. Inside an experiment, a Variant receives a
// share of the keys proportional to its Weight.
//
// # Bucketing
//
// With XXH64(data, seed) the 64-bit xxHash of the bytes of data (see the
// xxHash specification):
//
//	layer seed       = XXH64(salt, 0)
//	layer bucket     = XXH64(key, layer seed) mod 10000
//	experiment seed  = XXH64(experiment name, layer seed)
//	variant bucket   = XXH64(key, experiment seed) mod 10000
//
// A key is in an experiment when its layer bucket is in the experiment's
// range. Its variant is the one whose slice of the variant buckets holds
// its variant bucket: the variants, in order, own consecutive slices of
// [0, 10000) sized by their weights (cumulative shares rounded to a
// bucket). The same key gets the same buckets in every process, on every
// machine, forever: golden vectors in the tests pin the formulas, and
// analysts can recompute a bucket with any XXH64 library that takes a
// seed.
//
// XXH64 was chosen over the standard library's FNV because FNV-1a's low bits
// depend only on the low bits of the input bytes, which biases a modulus
// of 10,000 (a multiple of 16); XXH64 avalanches every input bit into every
// output bit, is fast on short keys, and is specified precisely enough to
// be reproduced elsewhere. The package implements it from the
// specification; seeding rather than concatenating salt and key keeps
// Assign free of allocations.
//
// # Raising an allocation keeps assigned keys in place
//
// Raising an experiment's Allocation extends its range at the end:
// [s, s+a) becomes [s, s+a') with a' > a, which contains the old range.
// The layer bucket of a key depends on the salt and the key only, so a key
// in the old range is in the new one, in the same experiment. Its variant
// depends on its variant bucket, a second hash of the salt, the experiment
// name and the key only (not of the range), and on the weights, which did
// not change: it is in the same variant. Raising an allocation therefore
// only admits new keys. When the extended range would reach a neighbour's
// range, New refuses the configuration (a validation problem) rather than
// move either experiment's keys; leave room between Starts for growth.
//
// Everything else that enters the formulas reshuffles keys: a new salt (or
// a new layer name when the salt defaults to it) reshuffles the layer, a
// new experiment name, new weights or a new order of the variants
// reshuffle the experiment's variants, and a lower allocation or another
// Start moves keys out of the experiment.
//
// # Routing an event in several layers
//
// Assign returns one Assignment per layer whose experiments hold the key,
// in the order of the layers in the configuration. The decision is: the
// first assignment decides the topic, so the order of the layers is their
// routing priority, and every assignment, the first included, travels with
// the event as a header so that each experiment can be analysed from the
// events of its own variants, wherever they were routed. Route implements
// the rule. An event with no assignment goes to the output topic.
//
// Because layers are independent, the events a higher-priority layer takes
// away from a later layer's variant topics are taken evenly from all its
// variants: the topics of a later layer receive fewer events, not a biased
// split of them.
//
// # Hash schemes of experiment platforms
//
// An experiment's Hash selects its scheme. SchemeThrottler is everything
// above. SchemeGrowthBook, SchemeOptimizely, SchemeStatsig and
// SchemeUnleash reproduce those vendors' SDKs exactly, so that the stream
// assigns a key the variant the app's SDK shows it: the vendor's hash of
// the key and its parameters (VendorParams), the vendor's ranges, rounding
// and exclusion rules, checked against the vendors' published test vectors
// (testdata/README.md). A layer's experiments share a scheme; a vendor
// layer holds several experiments only where the vendor keeps them
// exclusive (GrowthBook namespaces, Statsig segments). docs/assignment.md
// in the repository is the reference: parameters, how to copy them from
// the vendor, what is and is not reproduced, and non-ASCII keys.
//
// # Checking the split
//
// SRM is the sample-ratio-mismatch check: a chi-square test of the counts
// observed per variant against the weights, whose small p-value flags a
// broken split or a lossy pipeline.
//
// # Concurrency
//
// A Splitter is immutable after New and safe for concurrent use; Assign
// and Place allocate nothing when their dst has room (in a vendor scheme,
// as long as a key and its seed fit in 256 bytes). Configuration types are plain
// values with YAML tags, meant to be embedded in the product's config.
package splitter
