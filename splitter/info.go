package splitter

// ExperimentInfo describes one experiment of a Splitter as it splits keys.
type ExperimentInfo struct {
	Layer, Experiment string
	// Variants in configuration order.
	Variants []VariantInfo
}

// VariantInfo is one variant of an ExperimentInfo.
type VariantInfo struct {
	Name, Topic string
	// Share is the fraction of the experiment's keys the variant gets, as
	// split: its configured weight rounded to whole variant buckets, over
	// Buckets. The shares of an experiment sum to 1. An SRM check should
	// test against these, which are what the hash delivers.
	Share float64
}

// Experiments returns every experiment of the splitter, in layer order and,
// within a layer, in the order of their bucket ranges. A nil Splitter has
// none.
func (s *Splitter) Experiments() []ExperimentInfo {
	if s == nil {
		return nil
	}
	var out []ExperimentInfo
	for _, l := range s.layers {
		for _, e := range l.experiments {
			info := ExperimentInfo{Layer: l.name, Experiment: e.name, Variants: make([]VariantInfo, len(e.variants))}
			prev := 0
			for k, v := range e.variants {
				info.Variants[k] = VariantInfo{Name: v.name, Topic: v.topic, Share: float64(v.end-prev) / Buckets}
				prev = v.end
			}
			out = append(out, info)
		}
	}
	return out
}
