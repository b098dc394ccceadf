package splitter

// ExperimentInfo describes one experiment of a Splitter as it splits keys.
type ExperimentInfo struct {
	Layer, Experiment string
	Scheme            string // the experiment's hash scheme, one of Schemes
	// Variants in configuration order.
	Variants []VariantInfo
}

// VariantInfo is one variant of an ExperimentInfo.
type VariantInfo struct {
	Name, Topic string
	// Share is the fraction of the experiment's keys the variant gets, as
	// split. The shares of an experiment sum to 1. An SRM check should
	// test against these, which are what the hash delivers: throttler, the
	// configured weight rounded to whole variant buckets, over Buckets;
	// growthbook, the share of GrowthBook's hash values (1,000 or 10,000
	// of them) in the variant's range, after the SDK's equal split of
	// weights that do not sum to about 1; optimizely, statsig and unleash,
	// the weight over the sum of the weights, exact in their integer
	// buckets.
	Share float64
}

// Experiments returns every experiment of the splitter, in layer order and,
// within a layer, in the order of their bucket ranges (throttler scheme)
// or of the configuration (vendor schemes). A nil Splitter has none.
func (s *Splitter) Experiments() []ExperimentInfo {
	if s == nil {
		return nil
	}
	var out []ExperimentInfo
	for _, l := range s.layers {
		for _, e := range l.experiments {
			info := ExperimentInfo{Layer: l.name, Experiment: e.name, Scheme: l.scheme, Variants: make([]VariantInfo, len(e.variants))}
			for k, v := range e.variants {
				info.Variants[k] = VariantInfo{Name: v.name, Topic: v.topic, Share: v.share}
			}
			out = append(out, info)
		}
	}
	return out
}
