package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/throttler/throttler/splitter"
)

const schemesYAML = `
brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign, key: user}
budgets:
  - {name: account, target: 1000, period: 1h}
layers:
  - name: checkout
    experiments:
      - name: new-checkout
        hash: growthbook
        seed: checkout-seed
        hash_version: 2
        coverage: 0.5
        namespace: {id: pricing, start: 0, end: 0.5}
        string_encoding: utf8
        variants:
          - {name: control, weight: 0.5, topic: exp.control}
          - {name: treatment, weight: 0.5, topic: exp.treatment}
  - name: search
    experiments:
      - name: ranker
        hash: optimizely
        experiment_id: "1886780721"
        start: 25
        variants:
          - {name: a, weight: 24.99, topic: exp.a}
  - name: onboarding
    salt: 7433204e-76a3-498f-8540-96fd2e9224b5
    experiments:
      - name: tour
        hash: statsig
        seed: 5bbcd4da-4ca2-4545-b3ad-4d68e40bb7e8
        segments: [0-329, 500]
        variants:
          - {name: Control, weight: 50, topic: exp.tour-control}
          - {name: Test, weight: 50, topic: exp.tour-test}
  - name: flags
    experiments:
      - name: Feature.Variants.C
        hash: unleash
        rollout: 55
        rollout_group_id: Feature.Variants.C
        variants:
          - {name: variant1, weight: 33, topic: exp.v1}
          - {name: variant2, weight: 33, topic: exp.v2}
          - {name: variant3, weight: 33, topic: exp.v3}
`

// TestSchemesParse reads every vendor parameter from YAML.
func TestSchemesParse(t *testing.T) {
	c, err := Parse([]byte(schemesYAML))
	if err != nil {
		t.Fatal(err)
	}
	gb := c.Layers[0].Experiments[0]
	if gb.Hash != splitter.SchemeGrowthBook || gb.Seed != "checkout-seed" || gb.HashVersion != 2 || *gb.Coverage != 0.5 ||
		*gb.Namespace != (splitter.Namespace{ID: "pricing", End: 0.5}) || gb.StringEncoding != splitter.EncodingUTF8 {
		t.Errorf("growthbook experiment = %+v", gb)
	}
	if o := c.Layers[1].Experiments[0]; o.ExperimentID != "1886780721" || o.Start != 25 {
		t.Errorf("optimizely experiment = %+v", o)
	}
	if s := c.Layers[2].Experiments[0]; strings.Join(s.Segments, ",") != "0-329,500" {
		t.Errorf("statsig experiment = %+v", s)
	}
	if u := c.Layers[3].Experiments[0]; *u.Rollout != 55 || u.RolloutGroupID != "Feature.Variants.C" {
		t.Errorf("unleash experiment = %+v", u)
	}
}

// TestSchemeProblems checks that a bad scheme or parameter is named by its
// path and line.
func TestSchemeProblems(t *testing.T) {
	bad := strings.NewReplacer(
		"hash: growthbook", "hash: growthbok",
		"experiment_id: \"1886780721\"", "experiment_id: \"\"",
		"segments: [0-329, 500]", "segments: [0-1000]",
		"rollout: 55", "rollout: 155",
	).Replace(schemesYAML)
	_, err := Parse([]byte(bad))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse = %v, want Problems", err)
	}
	want := map[string]string{
		"layers[0].experiments[0].hash":          `got "growthbok"`,
		"layers[1].experiments[0].experiment_id": "required by the optimizely hash scheme",
		"layers[2].experiments[0].segments[0]":   `got "0-1000"`,
		"layers[3].experiments[0].rollout":       "got 155",
	}
	for _, p := range ps {
		if w, ok := want[p.Path]; ok && strings.Contains(p.Reason, w) && p.Line > 0 {
			delete(want, p.Path)
		}
	}
	if len(want) > 0 || len(ps) != 4 {
		t.Errorf("problems = %v; missing %v", ps, want)
	}
}
