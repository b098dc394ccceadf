package vendorcases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/throttler/throttler/splitter"
)

// GrowthBookFile is GrowthBook's SDK test suite (the sections used).
const GrowthBookFile = "growthbook/cases.json"

// GrowthBookCases is the part of GrowthBook's cases.json the splitter runs.
// Each case is a JSON array whose layout the SDKs' test harness defines.
type GrowthBookCases struct {
	// [seed, value, version, hash or null]
	Hash [][]json.RawMessage `json:"hash"`
	// [name, [number of variations, coverage, weights or null], ranges]
	GetBucketRange [][]json.RawMessage `json:"getBucketRange"`
	// [name, hash, ranges, variation or -1]
	ChooseVariation [][]json.RawMessage `json:"chooseVariation"`
	// [name, id, [namespace id, start, end], in namespace]
	InNamespace [][]json.RawMessage `json:"inNamespace"`
	// [name, context, experiment, value, in experiment, hash used]
	Run [][]json.RawMessage `json:"run"`
}

// LoadGrowthBook reads GrowthBook's cases from the testdata directory.
func LoadGrowthBook(dir string) (*GrowthBookCases, error) {
	var c GrowthBookCases
	return &c, readJSON(dir, GrowthBookFile, &c)
}

// Decode unmarshals the fields of a case into vs, in order.
func Decode(raw []json.RawMessage, vs ...any) error {
	if len(raw) < len(vs) {
		return fmt.Errorf("case has %d fields, want %d", len(raw), len(vs))
	}
	for i, v := range vs {
		if err := json.Unmarshal(raw[i], v); err != nil {
			return fmt.Errorf("field %d: %w", i, err)
		}
	}
	return nil
}

// growthBookExperiment is the part of a run case's experiment the splitter
// models; a case whose experiment has any other field is skipped.
type growthBookExperiment struct {
	Key         string            `json:"key"`
	Variations  []json.RawMessage `json:"variations"`
	Weights     []float64         `json:"weights"`
	Coverage    *float64          `json:"coverage"`
	Namespace   []json.RawMessage `json:"namespace"`
	Seed        string            `json:"seed"`
	HashVersion int               `json:"hashVersion"`
}

// growthBookModelled are the experiment fields growthBookExperiment holds.
var growthBookModelled = map[string]bool{"key": true, "variations": true, "weights": true,
	"coverage": true, "namespace": true, "seed": true, "hashVersion": true}

// growthBook returns the run cases that use only weights, coverage,
// namespaces, seeds and hash versions, with a string id as the only
// attribute (the key). The variants are named "v<index>"; an experiment
// without weights gets weights of 1, which GrowthBook splits equally, as
// it does when there are none.
func growthBook(dir string) ([]Case, error) {
	gb, err := LoadGrowthBook(dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for i, raw := range gb.Run {
		c, ok, err := growthBookRun(raw)
		if err != nil {
			return nil, fmt.Errorf("%s run[%d]: %w", GrowthBookFile, i, err)
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

func growthBookRun(raw []json.RawMessage) (Case, bool, error) {
	var (
		name      string
		ctx, expM map[string]json.RawMessage
		value     json.RawMessage
		in        bool
	)
	if err := Decode(raw, &name, &ctx, &expM, &value, &in); err != nil {
		return Case{}, false, err
	}
	key, ok := growthBookKey(ctx)
	for f := range expM {
		ok = ok && growthBookModelled[f]
	}
	if !ok {
		return Case{}, false, nil
	}
	var x growthBookExperiment
	b, _ := json.Marshal(expM)
	if err := json.Unmarshal(b, &x); err != nil {
		return Case{}, false, err
	}
	e := splitter.Experiment{Name: x.Key}
	e.Seed, e.HashVersion, e.Coverage = x.Seed, x.HashVersion, x.Coverage
	if len(x.Namespace) == 3 {
		e.Namespace = new(splitter.Namespace)
		if err := Decode(x.Namespace, &e.Namespace.ID, &e.Namespace.Start, &e.Namespace.End); err != nil {
			return Case{}, false, err
		}
	}
	want := ""
	for k, v := range x.Variations {
		w := 1.0
		if len(x.Weights) == len(x.Variations) {
			w = x.Weights[k]
		}
		e.Variants = append(e.Variants, variant(k, "v"+strconv.Itoa(k), w))
		if in && want == "" && bytes.Equal(compact(v), compact(value)) {
			want = "v" + strconv.Itoa(k)
		}
	}
	if in && want == "" {
		return Case{}, false, fmt.Errorf("%s: value %s is none of the variations", name, value)
	}
	return Case{Vendor: splitter.SchemeGrowthBook, File: GrowthBookFile, Name: name,
		Layer: oneLayer(splitter.SchemeGrowthBook, e), Key: key, Want: want,
		Refused: len(x.Variations) < 2}, true, nil
}

// growthBookKey returns the context's id attribute when it is the only
// thing the context holds and is a string.
func growthBookKey(ctx map[string]json.RawMessage) (string, bool) {
	if len(ctx) != 1 || ctx["attributes"] == nil {
		return "", false
	}
	var attrs map[string]json.RawMessage
	if json.Unmarshal(ctx["attributes"], &attrs) != nil || len(attrs) != 1 {
		return "", false
	}
	var id *string
	if json.Unmarshal(attrs["id"], &id) != nil || id == nil {
		return "", false // a missing or null id is not a key
	}
	return *id, true
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
