package splitter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// schemes checks that every experiment of the layer names a known hash
// scheme, the same for all, and returns the scheme of the first.
//
// An unknown scheme stops the checks of the layer (ok false): its other
// parameters cannot be judged.
func (v *validator) schemes(p string, l *Layer) (scheme string, ok bool) {
	first := schemeOf(&l.Experiments[0])
	ok = true
	for j := range l.Experiments {
		e := &l.Experiments[j]
		scheme := schemeOf(e)
		hp := p + ".experiments[" + strconv.Itoa(j) + "].hash"
		switch {
		case !slices.Contains(Schemes, scheme):
			v.add(hp, fmt.Sprintf("must be one of %s, got %q", strings.Join(Schemes, ", "), e.Hash))
			ok = false
		case scheme != first:
			v.add(hp, fmt.Sprintf("%q differs from the %q scheme of experiments[0]: the experiments of a layer share one hash scheme", scheme, first))
		}
	}
	return first, ok
}

// vendorParam is one of the VendorParams, for the check that no
// experiment sets a parameter its scheme does not use.
type vendorParam struct {
	name    string // YAML name
	set     func(*VendorParams) bool
	schemes []string // the schemes that use it
}

var vendorParams = []vendorParam{
	{"seed", func(p *VendorParams) bool { return p.Seed != "" }, []string{SchemeGrowthBook, SchemeStatsig, SchemeUnleash}},
	{"hash_version", func(p *VendorParams) bool { return p.HashVersion != 0 }, []string{SchemeGrowthBook}},
	{"coverage", func(p *VendorParams) bool { return p.Coverage != nil }, []string{SchemeGrowthBook}},
	{"namespace", func(p *VendorParams) bool { return p.Namespace != nil }, []string{SchemeGrowthBook}},
	{"experiment_id", func(p *VendorParams) bool { return p.ExperimentID != "" }, []string{SchemeOptimizely}},
	{"segments", func(p *VendorParams) bool { return len(p.Segments) > 0 }, []string{SchemeStatsig}},
	{"rollout", func(p *VendorParams) bool { return p.Rollout != nil }, []string{SchemeUnleash}},
	{"rollout_group_id", func(p *VendorParams) bool { return p.RolloutGroupID != "" }, []string{SchemeUnleash}},
	{"string_encoding", func(p *VendorParams) bool { return p.StringEncoding != "" }, []string{SchemeGrowthBook, SchemeUnleash}},
}

// unusedParams reports the vendor parameters set on an experiment whose
// scheme does not use them.
func (v *validator) unusedParams(ep string, e *Experiment, scheme string) {
	for _, vp := range vendorParams {
		if vp.set(&e.VendorParams) && !slices.Contains(vp.schemes, scheme) {
			v.add(ep+"."+vp.name, fmt.Sprintf("is not used by the %s hash scheme (only by %s)", scheme, strings.Join(vp.schemes, ", ")))
		}
	}
}

// vendorLayer checks a layer whose experiments use a vendor scheme.
func (v *validator) vendorLayer(p string, l *Layer, scheme string) {
	if l.Salt != "" && scheme != SchemeStatsig {
		v.add(p+".salt", "is not used by the "+scheme+" hash scheme")
	}
	names := make(map[string]int, len(l.Experiments))
	segments := false
	for j := range l.Experiments {
		e := &l.Experiments[j]
		ep := p + ".experiments[" + strconv.Itoa(j) + "]"
		v.name(ep+".name", e.Name, names, j, "experiments")
		v.unusedParams(ep, e, scheme)
		if e.Allocation != 0 {
			v.add(ep+".allocation", "is not used by the "+scheme+" hash scheme, which places keys by its own parameters")
		}
		start := 0
		switch scheme {
		case SchemeGrowthBook:
			v.growthBook(ep, e)
		case SchemeOptimizely:
			start = v.optimizely(ep, e)
		case SchemeStatsig:
			v.statsig(ep, e)
			segments = segments || len(e.Segments) > 0
		case SchemeUnleash:
			v.unleash(ep, e)
		}
		if e.Start != 0 && scheme != SchemeOptimizely {
			v.add(ep+".start", "is not used by the "+scheme+" hash scheme")
		}
		v.variants(ep, e.Variants, scheme, start)
	}
	if segments && strings.TrimSpace(l.Salt) == "" {
		v.add(p+".salt", "is required by the statsig segments of its experiments: Statsig's layer salt")
	}
	v.exclusive(p, l, scheme)
}

func (v *validator) growthBook(ep string, e *Experiment) {
	p := &e.VendorParams
	if p.HashVersion < 0 || p.HashVersion > 2 {
		v.add(ep+".hash_version", fmt.Sprintf("must be 1 or 2, got %d", p.HashVersion))
	}
	if c := p.Coverage; c != nil && !(*c >= 0 && *c <= 1) {
		v.add(ep+".coverage", "must be from 0 to 1, got "+formatFloat(*c))
	}
	if ns := p.Namespace; ns != nil {
		if strings.TrimSpace(ns.ID) == "" {
			v.add(ep+".namespace.id", "must not be empty")
		}
		if !(ns.Start >= 0 && ns.Start < ns.End && ns.End <= 1) {
			v.add(ep+".namespace", fmt.Sprintf("want 0 <= start < end <= 1, got start %s, end %s", formatFloat(ns.Start), formatFloat(ns.End)))
		}
	}
	if len(e.Variants) == 1 {
		v.add(ep+".variants", "growthbook runs no experiment of fewer than 2 variants (the SDK assigns nobody)")
	}
	v.encoding(ep, p.StringEncoding)
}

// encoding checks a StringEncoding.
func (v *validator) encoding(ep, enc string) {
	switch enc {
	case "", EncodingUTF8, EncodingUTF16:
	default:
		v.add(ep+".string_encoding", fmt.Sprintf("must be %q or %q, got %q", EncodingUTF8, EncodingUTF16, enc))
	}
}

// optimizely checks an optimizely experiment and returns its Start in
// buckets.
func (v *validator) optimizely(ep string, e *Experiment) int {
	if strings.TrimSpace(e.ExperimentID) == "" {
		v.add(ep+".experiment_id", "is required by the optimizely hash scheme: the experiment's id in the datafile")
	}
	start, ok := toBuckets(e.Start)
	if !ok || start < 0 || start >= Buckets || !isWholeBucket(e.Start) {
		v.add(ep+".start", "must be a percentage at least 0 and less than 100, a multiple of 0.01, got "+formatFloat(e.Start))
		return 0
	}
	return start
}

func (v *validator) statsig(ep string, e *Experiment) {
	if strings.TrimSpace(e.Seed) == "" {
		v.add(ep+".seed", "is required by the statsig hash scheme: the experiment's salt")
	}
	for k, item := range e.Segments {
		if _, _, err := parseSegment(item); err != "" {
			v.add(ep+".segments["+strconv.Itoa(k)+"]", err)
		}
	}
}

func (v *validator) unleash(ep string, e *Experiment) {
	if r := e.Rollout; r != nil && !(*r >= 0 && *r <= 100) {
		v.add(ep+".rollout", "must be a percentage from 0 to 100, got "+formatFloat(*r))
	}
	v.encoding(ep, e.StringEncoding)
}

// vendorWeights checks positive, finite weights as a vendor scheme wants
// them (see Variant.Weight).
func (v *validator) vendorWeights(ep string, vs []Variant, scheme string, start int) {
	var sum float64
	before := len(v.problems)
	for k, x := range vs {
		wp := ep + ".variants[" + strconv.Itoa(k) + "].weight"
		sum += x.Weight
		switch {
		case scheme == SchemeOptimizely && !isWholeBucket(x.Weight):
			v.add(wp, "must be a multiple of 0.01 (one bucket of 10000), got "+formatFloat(x.Weight))
		case scheme == SchemeStatsig && !isWhole(x.Weight*10):
			v.add(wp, "must be a multiple of 0.1 (one user bucket of 1000), got "+formatFloat(x.Weight))
		case scheme == SchemeUnleash && !isWhole(x.Weight):
			v.add(wp, "must be a whole number, as Unleash's weights are, got "+formatFloat(x.Weight))
		}
	}
	if len(v.problems) > before {
		return // the sum of weights that are wrong says nothing more
	}
	switch {
	case scheme == SchemeOptimizely && math.Round(sum*100)+float64(start) > Buckets:
		v.add(ep+".variants", fmt.Sprintf("weights sum to %s%% from start %s%%, past 100%%", formatFloat(sum), percent(start)))
	case scheme == SchemeStatsig && math.Round(sum*10) != statsigBuckets:
		v.add(ep+".variants", fmt.Sprintf("weights sum to %s%%; statsig groups share all of the experiment's users: 100%%", formatFloat(sum)))
	case scheme == SchemeUnleash && sum > math.MaxInt32:
		v.add(ep+".variants", "weights sum to "+formatFloat(sum)+", more than Unleash's total can be")
	}
}

// isWhole reports whether x is a whole number, allowing for the binary
// representation of decimal fractions.
func isWhole(x float64) bool { return math.Abs(x-math.Round(x)) <= 1e-6 }

// exclusive checks that the experiments of a vendor layer exclude one
// another by the vendor's own rules: GrowthBook namespaces of one id with
// disjoint ranges, Statsig segments that do not overlap. The other schemes
// have no such rule here: their layers hold one experiment.
func (v *validator) exclusive(p string, l *Layer, scheme string) {
	es := l.Experiments
	if len(es) < 2 {
		return
	}
	switch scheme {
	case SchemeGrowthBook:
		v.namespacesExclusive(p, es)
	case SchemeStatsig:
		sets := make([]*segmentSet, len(es))
		for j := range es {
			ep := p + ".experiments[" + strconv.Itoa(j) + "]"
			if sets[j] = parseSegments(es[j].Segments); sets[j] == nil {
				v.add(ep+".segments", "required when a statsig layer holds several experiments: the layer's buckets each owns")
				continue
			}
			for i := range j {
				if sets[i] != nil && sets[i].overlaps(sets[j]) {
					v.add(ep+".segments", fmt.Sprintf("overlap those of experiments[%d] %q; the experiments of a layer own disjoint segments", i, es[i].Name))
				}
			}
		}
	default:
		v.add(p+".experiments", fmt.Sprintf("a layer of the %s hash scheme holds one experiment; put each in its own layer", scheme))
	}
}

// namespacesExclusive checks that the growthbook experiments of a layer
// share a namespace id and own disjoint ranges of it.
func (v *validator) namespacesExclusive(p string, es []Experiment) {
	for j := range es {
		ep := p + ".experiments[" + strconv.Itoa(j) + "]"
		ns := es[j].Namespace
		if ns == nil {
			v.add(ep+".namespace", "required when a growthbook layer holds several experiments: namespaces of one id with disjoint ranges keep them exclusive")
			continue
		}
		for i := range j {
			o := es[i].Namespace
			switch {
			case o == nil:
			case o.ID != ns.ID:
				v.add(ep+".namespace.id", fmt.Sprintf("%q differs from experiments[%d]'s %q; the experiments of a layer share one namespace", ns.ID, i, o.ID))
			case ns.Start < o.End && o.Start < ns.End:
				v.add(ep+".namespace", fmt.Sprintf("range [%s, %s) overlaps experiments[%d] %q range [%s, %s)",
					formatFloat(ns.Start), formatFloat(ns.End), i, es[i].Name, formatFloat(o.Start), formatFloat(o.End)))
			}
		}
	}
}
