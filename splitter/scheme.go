package splitter

// Hash schemes of an experiment (Experiment.Hash).
const (
	// SchemeThrottler is the splitter's own bucketing: XXH64 layer and
	// variant buckets (see the package documentation). The default.
	SchemeThrottler = "throttler"
	// SchemeGrowthBook reproduces GrowthBook's SDKs: FNV-1a hash versions
	// 1 and 2 of the key with the experiment's seed, bucket ranges from
	// the weights and the coverage, and namespaces.
	SchemeGrowthBook = "growthbook"
	// SchemeOptimizely reproduces Optimizely's bucketer: MurmurHash3
	// x86_32 with seed 1 of the key followed by the experiment id, scaled
	// to a bucket of 10,000, and end-of-range traffic allocations.
	SchemeOptimizely = "optimizely"
	// SchemeStatsig reproduces Statsig's experiment groups: the first 8
	// bytes, big endian, of the SHA-256 of "salt.key", modulo 1,000, and
	// optionally the layer's allocation of those buckets.
	SchemeStatsig = "statsig"
	// SchemeUnleash reproduces Unleash's variants (MurmurHash3 of
	// "groupId:key" with seed 86028157, counted from 1 up to the total
	// weight) and its gradual rollout (seed 0, from 1 up to 100).
	SchemeUnleash = "unleash"
)

// Schemes lists the hash schemes in the order documentation gives them.
var Schemes = []string{SchemeThrottler, SchemeGrowthBook, SchemeOptimizely, SchemeStatsig, SchemeUnleash}

// VendorParams are the parameters of the vendor hash schemes, inlined in
// Experiment. Each is used by the schemes its comment names; setting one
// on an experiment whose scheme does not use it is a validation problem,
// so that a parameter is never silently ignored.
type VendorParams struct {
	// Seed is GrowthBook's seed (default: the experiment name, which is
	// GrowthBook's experiment key), Statsig's experiment salt (required)
	// or Unleash's variant groupId (default: the experiment name, which
	// is the feature name Unleash uses as groupId of feature variants).
	Seed string `yaml:"seed,omitempty"`
	// HashVersion is GrowthBook's hash version, 1 or 2. Default 1 (0 means
	// 1, as in the SDK).
	HashVersion int `yaml:"hash_version,omitempty"`
	// Coverage is GrowthBook's coverage, the share of the keys in the
	// experiment: 0 to 1. Absent means 1; 0 is a coverage of 0 (no key).
	Coverage *float64 `yaml:"coverage,omitempty"`
	// Namespace is GrowthBook's namespace; nil for none.
	Namespace *Namespace `yaml:"namespace,omitempty"`
	// ExperimentID is Optimizely's experiment id, appended to the key to
	// bucket it. Required by optimizely.
	ExperimentID string `yaml:"experiment_id,omitempty"`
	// Segments are the user buckets (0 to 999) of the layer that Statsig
	// allocated to the experiment, each "N" or an inclusive range "N-M";
	// a key is in the experiment when the SHA-256 bucket of the layer's
	// salt and the key is one of them. Absent means every bucket (an
	// experiment allocated 100%, alone in its layer). Statsig only; the
	// layer's Salt must then be Statsig's layer salt.
	Segments []string `yaml:"segments,omitempty"`
	// Rollout is the percentage of Unleash's gradual rollout (flexible
	// rollout or gradualRolloutUserId strategy): 0 to 100. A key is in the
	// experiment when its rollout value (1 to 100) is at most Rollout.
	// Absent means no rollout strategy: every key. Unleash only.
	Rollout *float64 `yaml:"rollout,omitempty"`
	// RolloutGroupID is the groupId of Unleash's rollout strategy. Default
	// Seed (Unleash's default too: the feature name). Unleash only.
	RolloutGroupID string `yaml:"rollout_group_id,omitempty"`
	// StringEncoding is how the key and the seeds become hash input, where
	// a vendor's SDKs disagree; they agree on ASCII. EncodingUTF16 hashes
	// UTF-16 code units: GrowthBook's specification (0.12.0), JavaScript
	// SDK and Go SDK from v0.7.0 feed each whole unit to FNV-1a, Unleash's
	// Node SDK (murmurhash3js) the low byte of each. EncodingUTF8 hashes
	// the UTF-8 bytes: GrowthBook's Go SDK before v0.7.0, Unleash's Go,
	// Java, Python and Rust SDKs. Default: utf16 for growthbook, utf8 for
	// unleash. With utf16 a key that is not valid UTF-8 is decoded as
	// JavaScript's TextDecoder would, U+FFFD for each bad byte. GrowthBook
	// and Unleash only: Optimizely's and Statsig's SDKs hash UTF-8 in
	// every language.
	StringEncoding string `yaml:"string_encoding,omitempty"`
}

// String encodings (VendorParams.StringEncoding).
const (
	EncodingUTF8  = "utf8"
	EncodingUTF16 = "utf16"
)

// utf16Strings reports whether an experiment of a scheme hashes strings as
// UTF-16 code units, by its StringEncoding or the scheme's default.
func utf16Strings(scheme, encoding string) bool {
	if encoding == "" {
		return scheme == SchemeGrowthBook
	}
	return encoding == EncodingUTF16
}
