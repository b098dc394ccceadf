package splitter

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The vendors' vectors of the functions under the assignment (GrowthBook's
// hash, getBucketRange, chooseVariation and inNamespace sections,
// Optimizely's bucket values, Statsig's hash). vectors_test.go runs the
// assignment cases through the public API; see testdata/README.md for the
// sources.

func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// fields unmarshals the fields of a GrowthBook case into vs, in order.
func fields(t *testing.T, raw []json.RawMessage, vs ...any) {
	t.Helper()
	for i, v := range vs {
		if err := json.Unmarshal(raw[i], v); err != nil {
			t.Fatalf("case %s: field %d: %v", raw, i, err)
		}
	}
}

type growthBookSpec struct {
	Hash, GetBucketRange, ChooseVariation, InNamespace [][]json.RawMessage
}

func TestGrowthBookSpecFunctions(t *testing.T) {
	var spec growthBookSpec
	readVectors(t, "growthbook/cases.json", &spec)
	tally := func(section string, total, failed int) {
		t.Logf("growthbook %s: %d/%d passed", section, total-failed, total)
		if total == 0 {
			t.Errorf("growthbook %s: no case", section)
		}
	}
	failed := 0
	for _, c := range spec.Hash {
		var seed, value string
		var version int
		var want *float64
		fields(t, c, &seed, &value, &version, &want)
		got, ok := growthBookHash([]byte(seed), []byte(value), version, true) // the specification's UTF-16
		if ok != (want != nil) || (ok && got != *want) {
			t.Errorf("hash(%q, %q, %d) = %v, %v; want %v", seed, value, version, got, ok, want)
			failed++
		}
	}
	tally("hash", len(spec.Hash), failed)

	failed = 0
	for _, c := range spec.GetBucketRange {
		var name string
		var args []json.RawMessage
		var want [][2]float64
		fields(t, c, &name, &args, &want)
		var n int
		var coverage float64
		var weights []float64
		fields(t, args, &n, &coverage, &weights)
		got := growthBookRanges(n, coverage, weights)
		if !sameRanges(got, want) {
			t.Errorf("getBucketRange %q = %v, want %v", name, got, want)
			failed++
		}
	}
	tally("getBucketRange", len(spec.GetBucketRange), failed)

	failed = 0
	for _, c := range spec.ChooseVariation {
		var name string
		var h float64
		var ranges [][2]float64
		var want int
		fields(t, c, &name, &h, &ranges, &want)
		rs := make([]growthBookRange, len(ranges))
		for i, r := range ranges {
			rs[i] = growthBookRange{r[0], r[1]}
		}
		if got := growthBookChoose(h, rs); got != want {
			t.Errorf("chooseVariation %q = %d, want %d", name, got, want)
			failed++
		}
	}
	tally("chooseVariation", len(spec.ChooseVariation), failed)

	failed = 0
	for _, c := range spec.InNamespace {
		var name, id string
		var ns []json.RawMessage
		var want bool
		fields(t, c, &name, &id, &ns, &want)
		var nsID string
		var start, end float64
		fields(t, ns, &nsID, &start, &end)
		if got := growthBookInNamespace([]byte(id), &namespace{seed: []byte("__" + nsID), start: start, end: end}, true); got != want {
			t.Errorf("inNamespace %q = %v, want %v", name, got, want)
			failed++
		}
	}
	tally("inNamespace", len(spec.InNamespace), failed)
}

// sameRanges compares ranges as GrowthBook's test harness does: each bound
// floored to 8 decimals.
func sameRanges(got []growthBookRange, want [][2]float64) bool {
	round := func(x float64) float64 { return math.Floor(x*1e8) / 1e8 }
	g := make([][2]float64, len(got))
	for i, r := range got {
		g[i] = [2]float64{round(r.lo), round(r.hi)}
	}
	w := make([][2]float64, len(want))
	for i, r := range want {
		w[i] = [2]float64{round(r[0]), round(r[1])}
	}
	return reflect.DeepEqual(g, w)
}

func TestOptimizelyBucketValues(t *testing.T) {
	var v struct {
		BucketValue []struct {
			BucketingID  string `json:"bucketing_id"`
			ExperimentID string `json:"experiment_id"`
			Bucket       int    `json:"bucket"`
		} `json:"bucket_value"`
	}
	readVectors(t, "optimizely/bucketer.json", &v)
	for _, x := range v.BucketValue {
		if got := optimizelyBucket([]byte(x.BucketingID), []byte(x.ExperimentID)); got != x.Bucket {
			t.Errorf("bucket(%q + %q) = %d, want %d", x.BucketingID, x.ExperimentID, got, x.Bucket)
		}
	}
	t.Logf("optimizely bucket values: %d vectors", len(v.BucketValue))
	if len(v.BucketValue) == 0 {
		t.Error("no vector")
	}
}

func TestStatsigHashVectors(t *testing.T) {
	var v struct {
		Hash []struct{ Input, Hash string }
	}
	readVectors(t, "statsig/evaluation.json", &v)
	for _, x := range v.Hash {
		want, err := hex.DecodeString(x.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got := statsigHash([]byte(x.Input)); got != beUint64(want) {
			t.Errorf("hash(%q) = %016x, want %s", x.Input, got, x.Hash)
		}
	}
	t.Logf("statsig hash: %d vectors", len(v.Hash))
	if len(v.Hash) == 0 {
		t.Error("no vector")
	}
}

func beUint64(b []byte) uint64 {
	var x uint64
	for _, c := range b {
		x = x<<8 | uint64(c)
	}
	return x
}

// TestNonASCIIVectors checks both string encodings against values the
// vendors' own SDKs computed for non-ASCII keys and seeds (see
// testdata/README.md): GrowthBook's utf16 (JavaScript SDK, Go SDK v0.7.0)
// and utf8 (Go SDK v0.6.0), and Unleash's utf16 (Node SDK).
func TestNonASCIIVectors(t *testing.T) {
	type gbRow struct {
		Experiment, Seed, Key string
		HashVersion           int `json:"hash_version"`
		Variation             int
		Bucket                float64
	}
	var gb struct{ UTF16, UTF8 []gbRow }
	readVectors(t, "growthbook/non_ascii.json", &gb)
	eight := growthBookRanges(8, 1, nil)
	for _, enc := range []struct {
		name string
		u16  bool
		rows []gbRow
	}{{"utf16", true, gb.UTF16}, {"utf8", false, gb.UTF8}} {
		for _, r := range enc.rows {
			seed := r.Seed
			if seed == "" {
				seed = r.Experiment
			}
			h, _ := growthBookHash([]byte(seed), []byte(r.Key), r.HashVersion, enc.u16)
			if v := growthBookChoose(h, eight); h != r.Bucket || v != r.Variation {
				t.Errorf("growthbook %s: hash(%q, %q, v%d) = %v, variation %d; want %v, %d", enc.name, seed, r.Key, r.HashVersion, h, v, r.Bucket, r.Variation)
			}
		}
		t.Logf("growthbook %s: %d vectors", enc.name, len(enc.rows))
	}
	var un struct {
		UTF16 []struct {
			GroupID      string `json:"group_id"`
			Key          string
			VariantValue uint32 `json:"variant_value_1000"`
			RolloutValue uint32 `json:"rollout_value"`
		}
	}
	readVectors(t, "unleash/non_ascii.json", &un)
	for _, r := range un.UTF16 {
		v := unleashNormalized([]byte(r.GroupID), []byte(r.Key), true, unleashVariantSeed, 1000)
		ro := unleashNormalized([]byte(r.GroupID), []byte(r.Key), true, unleashRolloutSeed, 100)
		if v != r.VariantValue || ro != r.RolloutValue {
			t.Errorf("unleash utf16 %q:%q: variant value %d, rollout value %d; want %d, %d", r.GroupID, r.Key, v, ro, r.VariantValue, r.RolloutValue)
		}
	}
	t.Logf("unleash utf16: %d vectors", len(un.UTF16))
	if len(gb.UTF16) == 0 || len(gb.UTF8) == 0 || len(un.UTF16) == 0 {
		t.Error("a vector file is empty")
	}
}
