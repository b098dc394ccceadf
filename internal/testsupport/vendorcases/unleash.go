package vendorcases

import (
	"fmt"
	"strconv"

	"github.com/throttler/throttler/splitter"
)

// UnleashFiles are the specifications of Unleash's client specification
// whose cases the splitter runs (see the README).
var UnleashFiles = []string{
	"unleash/03-gradual-rollout-user-id-strategy.json",
	"unleash/04-gradual-rollout-session-id-strategy.json",
	"unleash/08-variants.json",
	"unleash/10-flexible-rollout-strategy.json",
	"unleash/12-custom-stickiness.json",
	"unleash/16-strategy-variants.json",
}

type unleashSpec struct {
	State struct {
		Features []unleashFeature `json:"features"`
	} `json:"state"`
	Tests        []unleashTest `json:"tests"`
	VariantTests []unleashTest `json:"variantTests"`
}

type unleashFeature struct {
	Name       string            `json:"name"`
	Enabled    bool              `json:"enabled"`
	Strategies []unleashStrategy `json:"strategies"`
	Variants   []unleashVariant  `json:"variants"`
}

type unleashStrategy struct {
	Name        string            `json:"name"`
	Parameters  map[string]string `json:"parameters"`
	Constraints []any             `json:"constraints"`
	Variants    []unleashVariant  `json:"variants"`
}

type unleashVariant struct {
	Name       string  `json:"name"`
	Weight     float64 `json:"weight"`
	Stickiness string  `json:"stickiness"`
	Overrides  []struct {
		ContextName string   `json:"contextName"`
		Values      []string `json:"values"`
	} `json:"overrides"`
}

type unleashTest struct {
	Description string         `json:"description"`
	Context     map[string]any `json:"context"`
	ToggleName  string         `json:"toggleName"`
	// ExpectedResult is a bool (tests) or a variant (variantTests).
	ExpectedResult any `json:"expectedResult"`
}

// unleash returns the cases of the Unleash specifications that the
// splitter models: an enabled feature with at most one strategy, of kind
// default, flexibleRollout, gradualRolloutUserId or gradualRolloutSessionId,
// with no constraints; a context that holds the stickiness value (the key);
// no variant override for it. An isEnabled test becomes an experiment with
// one variant "on"; a variant test one with the feature's variants (or the
// strategy's), "disabled" meaning no experiment.
func unleash(dir string) ([]Case, error) {
	var out []Case
	for _, file := range UnleashFiles {
		var spec unleashSpec
		if err := readJSON(dir, file, &spec); err != nil {
			return nil, err
		}
		features := map[string]*unleashFeature{}
		for i := range spec.State.Features {
			features[spec.State.Features[i].Name] = &spec.State.Features[i]
		}
		for _, t := range spec.Tests {
			if c, ok := unleashCase(file, features[t.ToggleName], t, false); ok {
				out = append(out, c)
			}
		}
		for _, t := range spec.VariantTests {
			if c, ok := unleashCase(file, features[t.ToggleName], t, true); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func unleashCase(file string, f *unleashFeature, t unleashTest, variants bool) (Case, bool) {
	if f == nil || !f.Enabled || len(f.Strategies) > 1 {
		return Case{}, false
	}
	var st unleashStrategy
	if len(f.Strategies) == 1 {
		st = f.Strategies[0]
	}
	e := splitter.Experiment{Name: f.Name}
	stickiness, ok := unleashRollout(&e, st)
	if !ok || len(st.Constraints) > 0 {
		return Case{}, false
	}
	vs, group := st.Variants, st.Parameters["groupId"]
	if len(vs) == 0 {
		vs, group = f.Variants, f.Name
		if len(vs) > 0 && vs[0].Stickiness != "" && vs[0].Stickiness != "default" {
			stickiness = vs[0].Stickiness
		}
	}
	key, ok := unleashKey(t.Context, stickiness)
	if !ok {
		return Case{}, false
	}
	want := ""
	if !variants {
		e.Variants = []splitter.Variant{variant(0, "on", 1)}
		if t.ExpectedResult == true {
			want = "on"
		}
	} else {
		if len(vs) == 0 || unleashOverridden(vs, key) {
			return Case{}, false
		}
		e.Seed = group
		for k, v := range vs {
			e.Variants = append(e.Variants, variant(k, v.Name, v.Weight))
		}
		if r, _ := t.ExpectedResult.(map[string]any); r["enabled"] == true {
			want = fmt.Sprint(r["name"])
		}
	}
	return Case{Vendor: splitter.SchemeUnleash, File: file, Name: t.Description,
		Layer: oneLayer(splitter.SchemeUnleash, e), Key: key, Want: want}, true
}

// unleashRollout sets the experiment's rollout from the strategy and
// returns the strategy's stickiness; false for a strategy not modelled.
func unleashRollout(e *splitter.Experiment, st unleashStrategy) (string, bool) {
	param, stickiness := "", "default"
	switch st.Name {
	case "", "default":
		return stickiness, true
	case "flexibleRollout":
		param = "rollout"
		if s := st.Parameters["stickiness"]; s != "" {
			stickiness = s
		}
	case "gradualRolloutUserId":
		param, stickiness = "percentage", "userId"
	case "gradualRolloutSessionId":
		param, stickiness = "percentage", "sessionId"
	default:
		return "", false
	}
	r, err := strconv.ParseFloat(st.Parameters[param], 64)
	if err != nil {
		return "", false
	}
	e.Rollout = &r
	e.RolloutGroupID = st.Parameters["groupId"]
	return stickiness, true
}

// unleashKey returns the context's stickiness value: userId, else
// sessionId, for the default stickiness; the named field (or property)
// otherwise. False when there is none (the SDK then draws a random value
// or disables the feature).
func unleashKey(ctx map[string]any, stickiness string) (string, bool) {
	field := func(name string) string {
		if v, ok := ctx[name].(string); ok {
			return v
		}
		props, _ := ctx["properties"].(map[string]any)
		v, _ := props[name].(string)
		return v
	}
	key := field(stickiness)
	if stickiness == "default" {
		if key = field("userId"); key == "" {
			key = field("sessionId")
		}
	}
	return key, key != ""
}

// unleashOverridden reports whether a variant override names the key
// (overrides are not hashing, so those cases are not run).
func unleashOverridden(vs []unleashVariant, key string) bool {
	for _, v := range vs {
		for _, o := range v.Overrides {
			for _, x := range o.Values {
				if x == key {
					return true
				}
			}
		}
	}
	return false
}
