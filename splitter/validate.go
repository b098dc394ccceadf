package splitter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Validate checks layers and returns every problem it finds, each with the
// path of the offending field; nil means New would accept the layers.
//
// It checks that layer, experiment and variant names are not blank and are
// unique among their siblings (layer names across all layers); that salts
// (after defaulting to the layer name) differ across layers; that every
// layer has experiments and every experiment has variants; that
// allocations and starts are percentages in range with a resolution of
// 0.01; that the experiments of a layer own disjoint ranges inside the
// layer (so their allocations sum to at most 100%); that weights are
// positive and finite and none rounds to an empty share; and that topics
// are not blank.
func Validate(layers []Layer) Problems {
	var v validator
	names := make(map[string]int, len(layers))
	salts := make(map[string]int, len(layers))
	for i := range layers {
		l := &layers[i]
		p := "layers[" + strconv.Itoa(i) + "]"
		v.name(p+".name", l.Name, names, i, "layers")
		salt, how := l.Salt, ""
		if salt == "" {
			salt, how = l.Name, " (the layer name, as salt is empty)"
		}
		if j, dup := salts[salt]; dup {
			v.add(p+".salt", fmt.Sprintf("salt %q%s is also the salt of layers[%d]; layers need distinct salts to be independent", salt, how, j))
		} else {
			salts[salt] = i
		}
		v.layer(p, l)
	}
	return v.problems
}

// MaxNameBytes is the longest layer, experiment or variant name, in bytes.
// Names travel in the output records' headers and in the ledger's
// per-variant counters, and a variant limit is a budget named
// "variant:<layer>/<experiment>/<variant>", which must stay within the
// 1,024 bytes of a budget's name (flow.MaxNameBytes).
const MaxNameBytes = 256

type validator struct{ problems Problems }

func (v *validator) add(path, reason string) {
	v.problems = append(v.problems, &Problem{Path: path, Reason: reason})
}

// name checks that a name is not blank and not already in seen (the names
// of earlier siblings, listed under plural), then records it.
func (v *validator) name(path, name string, seen map[string]int, i int, plural string) {
	if strings.TrimSpace(name) == "" {
		v.add(path, "must not be empty")
		return
	}
	if len(name) > MaxNameBytes {
		v.add(path, fmt.Sprintf("is %d bytes long, more than %d", len(name), MaxNameBytes))
		return
	}
	if j, dup := seen[name]; dup {
		v.add(path, fmt.Sprintf("%q is also the name of %s[%d]", name, plural, j))
		return
	}
	seen[name] = i
}

// span is an experiment's validated bucket range [start, end).
type span struct {
	index      int
	start, end int
}

func (v *validator) layer(p string, l *Layer) {
	if len(l.Experiments) == 0 {
		v.add(p+".experiments", "must have at least one experiment")
		return
	}
	switch scheme, ok := v.schemes(p, l); {
	case !ok:
		return
	case scheme != SchemeThrottler:
		v.vendorLayer(p, l, scheme)
		return
	}
	names := make(map[string]int, len(l.Experiments))
	var spans []span
	total := 0
	for j := range l.Experiments {
		e := &l.Experiments[j]
		ep := p + ".experiments[" + strconv.Itoa(j) + "]"
		v.name(ep+".name", e.Name, names, j, "experiments")
		alloc, okAlloc := toBuckets(e.Allocation)
		if !okAlloc || alloc <= 0 || alloc > Buckets {
			v.add(ep+".allocation", "must be a percentage more than 0 and at most 100, got "+formatFloat(e.Allocation))
			okAlloc = false
		} else if !isWholeBucket(e.Allocation) {
			v.add(ep+".allocation", "must be a multiple of 0.01 (one bucket of "+strconv.Itoa(Buckets)+"), got "+formatFloat(e.Allocation))
			okAlloc = false
		}
		start, okStart := toBuckets(e.Start)
		if !okStart || start < 0 || start >= Buckets {
			v.add(ep+".start", "must be a percentage at least 0 and less than 100, got "+formatFloat(e.Start))
			okStart = false
		} else if !isWholeBucket(e.Start) {
			v.add(ep+".start", "must be a multiple of 0.01 (one bucket of "+strconv.Itoa(Buckets)+"), got "+formatFloat(e.Start))
			okStart = false
		}
		if okAlloc {
			total += alloc
		}
		v.unusedParams(ep, e, SchemeThrottler)
		if okAlloc && okStart {
			if start+alloc > Buckets {
				v.add(ep, fmt.Sprintf("start %s%% + allocation %s%% ends at %s%%, past the end of the layer (100%%)",
					percent(start), percent(alloc), percent(start+alloc)))
			} else {
				spans = append(spans, span{index: j, start: start, end: start + alloc})
			}
		}
		v.variants(ep, e.Variants, SchemeThrottler, 0)
	}
	// Every pair, so that each overlap is reported once, on the later
	// experiment of the pair.
	for b := range spans {
		for a := range b {
			x, y := spans[a], spans[b]
			if x.start < y.end && y.start < x.end {
				v.add(p+".experiments["+strconv.Itoa(y.index)+"]", fmt.Sprintf(
					"range [%s%%, %s%%) overlaps experiments[%d] %q range [%s%%, %s%%); experiments of a layer must own disjoint ranges (set start)",
					percent(y.start), percent(y.end), x.index, l.Experiments[x.index].Name, percent(x.start), percent(x.end)))
			}
		}
	}
	if total > Buckets {
		v.add(p+".experiments", "allocations sum to "+percent(total)+"%, more than 100%")
	}
}

// variants checks the variants of an experiment of a scheme: names, topics
// and weights (positive and finite, then as the scheme wants them; start is
// the experiment's Start in buckets, for optimizely).
func (v *validator) variants(ep string, vs []Variant, scheme string, start int) {
	if len(vs) == 0 {
		v.add(ep+".variants", "must have at least one variant")
		return
	}
	names := make(map[string]int, len(vs))
	weightsOK := true
	for k := range vs {
		x := &vs[k]
		vp := ep + ".variants[" + strconv.Itoa(k) + "]"
		v.name(vp+".name", x.Name, names, k, "variants")
		if !(x.Weight > 0) || math.IsInf(x.Weight, 0) {
			v.add(vp+".weight", "must be positive and finite, got "+formatFloat(x.Weight))
			weightsOK = false
		}
		if strings.TrimSpace(x.Topic) == "" {
			v.add(vp+".topic", "must not be empty")
		}
	}
	if !weightsOK {
		return
	}
	if scheme != SchemeThrottler {
		v.vendorWeights(ep, vs, scheme, start)
		return
	}
	ends, sum := variantEnds(vs, nil)
	if math.IsInf(sum, 0) {
		v.add(ep+".variants", "weights sum to infinity; use smaller weights")
		return
	}
	prev := 0
	for k, end := range ends {
		if end == prev {
			v.add(ep+".variants["+strconv.Itoa(k)+"].weight", fmt.Sprintf(
				"%s of a total of %s rounds to 0 of %d buckets; a variant needs at least 0.01%% of its experiment",
				formatFloat(vs[k].Weight), formatFloat(sum), Buckets))
		}
		prev = end
	}
}

// variantEnds appends to dst the end of each variant's range of variant
// buckets: variant k owns [ends[k-1], ends[k]) (ends[-1] being 0), where
// ends[k] is the variant's cumulative share of the total weight, rounded
// to a bucket. The last end is always Buckets. It also returns the total
// weight.
func variantEnds(vs []Variant, dst []int) ([]int, float64) {
	var sum float64
	for _, x := range vs {
		sum += x.Weight
	}
	var cum float64
	for k, x := range vs {
		cum += x.Weight
		end := int(math.Round(cum / sum * Buckets))
		if k == len(vs)-1 {
			end = Buckets
		}
		dst = append(dst, end)
	}
	return dst, sum
}

// toBuckets converts a percentage to the nearest whole number of buckets;
// false if p is not finite or far outside any valid range.
func toBuckets(p float64) (int, bool) {
	if math.IsNaN(p) || math.IsInf(p, 0) || math.Abs(p) > 1e6 {
		return 0, false
	}
	return int(math.Round(p * Buckets / 100)), true
}

// isWholeBucket reports whether a percentage is a multiple of 0.01, allowing
// for the binary representation of decimal fractions (12.34 is not exact).
func isWholeBucket(p float64) bool {
	x := p * Buckets / 100
	return math.Abs(x-math.Round(x)) <= 1e-6
}

// percent formats a number of buckets as a percentage, without the sign.
func percent(buckets int) string {
	return strconv.FormatFloat(float64(buckets)*100/Buckets, 'f', -1, 64)
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
