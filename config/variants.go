package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// VariantLimit is the limit of one variant, ready for the worker: the flow
// budget that counts the events the variant's topic receives, cluster-wide,
// and where the events over it go.
type VariantLimit struct {
	Layer, Experiment, Variant string
	// Budget is named splitter.LimitBudget(Layer, Experiment, Variant).
	Budget flow.Budget
	// Fallback is splitter.FallbackOutput or splitter.FallbackRejected.
	Fallback string
}

// VariantLimits returns the limits of the variants that have one, in the
// order of the file. Call it on a validated Config.
func (c *Config) VariantLimits() []VariantLimit {
	var out []VariantLimit
	for _, l := range c.Layers {
		for _, e := range l.Experiments {
			for _, v := range e.Variants {
				if v.Limit == nil {
					continue
				}
				fb := v.Limit.Fallback
				if fb == "" {
					fb = e.Fallback
				}
				if fb == "" {
					fb = splitter.FallbackOutput
				}
				out = append(out, VariantLimit{
					Layer: l.Name, Experiment: e.Name, Variant: v.Name,
					Budget: flow.Budget{
						Name:   splitter.LimitBudget(l.Name, e.Name, v.Name),
						Target: v.Limit.Target,
						Begin:  v.Limit.Begin,
						End:    v.Limit.End,
						Period: v.Limit.Period,
					},
					Fallback: fb,
				})
			}
		}
	}
	return out
}

// variantLimits checks the experiments' fallbacks and the variants'
// limits: target positive and finite; begin and end, or period; a known
// fallback; budget names that no budget uses and that are distinct.
func (v *checker) variantLimits(c *Config) {
	fallback := func(path, fb string) {
		switch fb {
		case "", splitter.FallbackOutput, splitter.FallbackRejected:
		default:
			v.add(path, fmt.Sprintf("must be %q or %q, got %q", splitter.FallbackOutput, splitter.FallbackRejected, fb))
		}
	}
	for i, b := range c.Budgets {
		if strings.HasPrefix(b.Name, splitter.LimitPrefix) {
			v.add("budgets["+strconv.Itoa(i)+"].name", fmt.Sprintf("%q: the prefix %q is reserved for variant limits", b.Name, splitter.LimitPrefix))
		}
	}
	names := map[string]string{}
	for i, l := range c.Layers {
		for j, e := range l.Experiments {
			ep := "layers[" + strconv.Itoa(i) + "].experiments[" + strconv.Itoa(j) + "]"
			fallback(ep+".fallback", e.Fallback)
			for k, vr := range e.Variants {
				lim := vr.Limit
				if lim == nil {
					continue
				}
				p := ep + ".variants[" + strconv.Itoa(k) + "].limit"
				switch {
				case math.IsNaN(lim.Target) || math.IsInf(lim.Target, 0):
					v.add(p+".target", fmt.Sprintf("must be a finite number, got %v", lim.Target))
				case lim.Target <= 0:
					v.add(p+".target", fmt.Sprintf("must be positive, got %v", lim.Target))
				}
				v.budgetTime(budgetPath{at: p}, Budget{Begin: lim.Begin, End: lim.End, Period: lim.Period})
				fallback(p+".fallback", lim.Fallback)
				name := splitter.LimitBudget(l.Name, e.Name, vr.Name)
				if other, dup := names[name]; dup {
					v.add(p, fmt.Sprintf("its budget name %q is also that of %s (a name in layer/experiment/variant contains '/')", name, other))
				}
				names[name] = p
			}
		}
	}
}
