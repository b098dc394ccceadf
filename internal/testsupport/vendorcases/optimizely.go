package vendorcases

import (
	"fmt"

	"github.com/throttler/throttler/splitter"
)

// OptimizelyFile holds Optimizely's bucketer vectors (see the README).
const OptimizelyFile = "optimizely/bucketer.json"

// OptimizelyVectors are Optimizely's bucketer vectors.
type OptimizelyVectors struct {
	// BucketValue: the bucket of a bucketing id in an experiment.
	BucketValue []struct {
		BucketingID  string `json:"bucketing_id"`
		ExperimentID string `json:"experiment_id"`
		Bucket       int    `json:"bucket"`
	} `json:"bucket_value"`
	// BucketToEntity: the entity of a traffic allocation a bucketing id
	// falls in, "" for none.
	BucketToEntity []struct {
		Name              string `json:"name"`
		BucketingID       string `json:"bucketing_id"`
		ExperimentID      string `json:"experiment_id"`
		TrafficAllocation []struct {
			EntityID   string `json:"entity_id"`
			EndOfRange int    `json:"end_of_range"`
		} `json:"traffic_allocation"`
		Want string `json:"want"`
	} `json:"bucket_to_entity"`
}

// LoadOptimizely reads Optimizely's vectors from the testdata directory.
func LoadOptimizely(dir string) (*OptimizelyVectors, error) {
	var v OptimizelyVectors
	return &v, readJSON(dir, OptimizelyFile, &v)
}

// optimizely returns the bucket-to-entity vectors as experiments: a leading
// range without an entity is the experiment's Start, and each entity's
// range is a variant named after it whose weight is its width in percent.
// A trailing range without an entity is left unallocated; one between two
// entities cannot be configured and fails the load.
func optimizely(dir string) ([]Case, error) {
	v, err := LoadOptimizely(dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, x := range v.BucketToEntity {
		e := splitter.Experiment{Name: "experiment-" + x.ExperimentID}
		e.ExperimentID = x.ExperimentID
		prev := 0
		for k, r := range x.TrafficAllocation {
			switch {
			case r.EntityID == "" && len(e.Variants) == 0:
				e.Start = float64(r.EndOfRange) / 100
			case r.EntityID == "" && k != len(x.TrafficAllocation)-1:
				return nil, fmt.Errorf("%s %q: a range without an entity between two entities", OptimizelyFile, x.Name)
			case r.EntityID != "":
				e.Variants = append(e.Variants, variant(k, r.EntityID, float64(r.EndOfRange-prev)/100))
			}
			prev = r.EndOfRange
		}
		out = append(out, Case{Vendor: splitter.SchemeOptimizely, File: OptimizelyFile, Name: x.Name,
			Layer: oneLayer(splitter.SchemeOptimizely, e), Key: x.BucketingID, Want: x.Want})
	}
	return out, nil
}
