package splitter

import (
	"math"
	"strconv"
	"strings"
)

// vendorExperiment is an experiment of a vendor scheme, ready to assign.
// Strings are kept as bytes so that hashing them does not copy.
type vendorExperiment struct {
	scheme string
	seed   []byte // growthbook seed, statsig salt, unleash variant groupId
	utf16  bool   // growthbook, unleash: hash strings as UTF-16 code units
	// growthbook
	version int
	ns      *namespace
	// optimizely
	id     []byte
	offset int // the first variant's range starts here
	// statsig: the layer's buckets allocated to the experiment; nil for all
	segments *segmentSet
	// unleash
	rolloutGroup []byte
	rollout      float64
	hasRollout   bool
	total        uint32
}

// schemeOf returns the experiment's scheme, "" meaning SchemeThrottler.
func schemeOf(e *Experiment) string {
	if e.Hash == "" {
		return SchemeThrottler
	}
	return e.Hash
}

// newVendorLayer builds a validated layer of a vendor scheme.
func newVendorLayer(l *Layer, scheme string) layer {
	cl := layer{name: l.Name, scheme: scheme, vendor: true, salt: []byte(l.Salt)}
	for i := range l.Experiments {
		cl.experiments = append(cl.experiments, newVendorExperiment(&l.Experiments[i], scheme))
	}
	return cl
}

// newVendorExperiment builds a validated experiment of a vendor scheme.
func newVendorExperiment(e *Experiment, scheme string) experiment {
	p := &e.VendorParams
	seed := p.Seed
	if seed == "" {
		seed = e.Name
	}
	v := &vendorExperiment{scheme: scheme, seed: []byte(seed), utf16: utf16Strings(scheme, p.StringEncoding)}
	ce := experiment{name: e.Name, vendor: v, variants: make([]variant, len(e.Variants))}
	for k, x := range e.Variants {
		ce.variants[k] = variant{name: x.Name, topic: x.Topic}
	}
	weights := make([]float64, len(e.Variants))
	for k, x := range e.Variants {
		weights[k] = x.Weight
	}
	switch scheme {
	case SchemeGrowthBook:
		v.version = max(p.HashVersion, 1)
		if p.Namespace != nil {
			v.ns = &namespace{seed: []byte("__" + p.Namespace.ID), start: p.Namespace.Start, end: p.Namespace.End}
		}
		coverage := 1.0
		if p.Coverage != nil {
			coverage = *p.Coverage
		}
		ranges := growthBookRanges(len(weights), coverage, weights)
		shares := growthBookShares(ranges, growthBookRanges(len(weights), 1, weights), v.version)
		for k := range ce.variants {
			ce.variants[k].gb, ce.variants[k].share = ranges[k], shares[k]
		}
	case SchemeOptimizely:
		v.id = []byte(p.ExperimentID)
		v.offset, _ = toBuckets(e.Start)
		setEnds(ce.variants, weights, v.offset, Buckets/100)
	case SchemeStatsig:
		v.segments = parseSegments(p.Segments)
		setEnds(ce.variants, weights, 0, statsigBuckets/100)
	case SchemeUnleash:
		v.rolloutGroup = v.seed
		if p.RolloutGroupID != "" {
			v.rolloutGroup = []byte(p.RolloutGroupID)
		}
		if p.Rollout != nil {
			v.rollout, v.hasRollout = *p.Rollout, true
		}
		setEnds(ce.variants, weights, 0, 1)
		v.total = uint32(ce.variants[len(ce.variants)-1].end)
	}
	return ce
}

// setEnds sets the variants' range ends from weights in units of scale
// (validated to be whole numbers of them), starting at offset, and their
// shares.
func setEnds(vs []variant, weights []float64, offset int, scale float64) {
	end, sum := offset, 0
	for k, w := range weights {
		n := int(math.Round(w * scale))
		end += n
		sum += n
		vs[k].end = end
	}
	prev := offset
	for k := range vs {
		vs[k].share = float64(vs[k].end-prev) / float64(sum)
		prev = vs[k].end
	}
}

// vendorPlace returns the index of the variant that holds key, or -1, and
// the scheme's raw bucket for it (ok false when the scheme has none: an
// empty key in growthbook and unleash, which assign it nothing).
func (e *experiment) vendorPlace(l *layer, key []byte) (k int, bucket float64, ok bool) {
	v := e.vendor
	switch v.scheme {
	case SchemeGrowthBook:
		if len(key) == 0 {
			return -1, 0, false
		}
		h, _ := growthBookHash(v.seed, key, v.version, v.utf16) // version validated
		if v.ns != nil && !growthBookInNamespace(key, v.ns, v.utf16) {
			return -1, h, true
		}
		for k := range e.variants {
			if r := e.variants[k].gb; h >= r.lo && h < r.hi {
				return k, h, true
			}
		}
		return -1, h, true
	case SchemeOptimizely:
		b := optimizelyBucket(key, v.id)
		if b < v.offset {
			return -1, float64(b), true
		}
		return e.firstBelow(b), float64(b), true
	case SchemeStatsig:
		b := statsigBucket(v.seed, key)
		if v.segments != nil && !v.segments.has(statsigBucket(l.salt, key)) {
			return -1, float64(b), true
		}
		return e.firstBelow(b), float64(b), true
	}
	return e.unleashPlace(key)
}

// firstBelow returns the first variant whose end is more than b, or -1.
func (e *experiment) firstBelow(b int) int {
	for k := range e.variants {
		if b < e.variants[k].end {
			return k
		}
	}
	return -1
}

// unleashPlace is vendorPlace for unleash: the rollout first, then the
// variant whose cumulative weight reaches the key's value.
func (e *experiment) unleashPlace(key []byte) (int, float64, bool) {
	v := e.vendor
	if len(key) == 0 {
		return -1, 0, false
	}
	t := unleashNormalized(v.seed, key, v.utf16, unleashVariantSeed, v.total)
	if v.hasRollout {
		r := unleashNormalized(v.rolloutGroup, key, v.utf16, unleashRolloutSeed, 100)
		if !(v.rollout > 0 && float64(r) <= v.rollout) {
			return -1, float64(t), true
		}
	}
	return e.firstBelow(int(t) - 1), float64(t), true
}

// parseSegments returns the set of Statsig user buckets listed, nil for
// none listed; items that do not parse are skipped (Validate reports them).
func parseSegments(items []string) *segmentSet {
	if len(items) == 0 {
		return nil
	}
	var s segmentSet
	for _, item := range items {
		lo, hi, err := parseSegment(item)
		if err != "" {
			continue
		}
		for b := lo; b <= hi; b++ {
			s.add(b)
		}
	}
	return &s
}

// parseSegment parses "N" or "N-M" (inclusive), 0 <= N <= M <= 999; err
// says what is wrong, "" when nothing is.
func parseSegment(item string) (lo, hi int, err string) {
	a, b, isRange := strings.Cut(strings.TrimSpace(item), "-")
	lo, e1 := strconv.Atoi(strings.TrimSpace(a))
	hi, e2 := lo, error(nil)
	if isRange {
		hi, e2 = strconv.Atoi(strings.TrimSpace(b))
	}
	switch {
	case e1 != nil || e2 != nil:
		return 0, 0, "want a user bucket N or a range N-M, got " + strconv.Quote(item)
	case lo < 0 || hi >= statsigBuckets || lo > hi:
		return 0, 0, "want buckets from 0 to 999 with N <= M, got " + strconv.Quote(item)
	}
	return lo, hi, ""
}
