package vendorcases

import (
	"strconv"

	"github.com/throttler/throttler/splitter"
)

// StatsigFile holds Statsig's vectors (see the README).
const StatsigFile = "statsig/evaluation.json"

// StatsigVectors are Statsig's hash vectors and experiment evaluations.
type StatsigVectors struct {
	// Hash: the first 8 bytes of SHA-256(input), big endian, in hex.
	Hash []struct {
		Input string `json:"input"`
		Hash  string `json:"hash"`
	} `json:"hash"`
	// Experiments: the group of a user in an experiment, "" when the
	// layer does not allocate the user to it.
	Experiments []struct {
		Test       string `json:"test"`
		UserID     string `json:"user_id"`
		Experiment string `json:"experiment"`
		Salt       string `json:"salt"`
		Groups     []struct {
			Name  string `json:"name"`
			Below int    `json:"below"` // user bucket threshold
		} `json:"groups"`
		LayerSalt string `json:"layer_salt"`
		// AllocatedBuckets are the layer's user buckets allocated to the
		// experiment; null for all of them.
		AllocatedBuckets []int  `json:"allocated_buckets"`
		Want             string `json:"want"`
	} `json:"experiments"`
}

// LoadStatsig reads Statsig's vectors from the testdata directory.
func LoadStatsig(dir string) (*StatsigVectors, error) {
	var v StatsigVectors
	return &v, readJSON(dir, StatsigFile, &v)
}

// statsig returns the experiment evaluations as experiments: the groups
// are variants whose weights are the widths of their user bucket ranges in
// percent, the allocated buckets the experiment's segments, the layer salt
// the layer's salt.
func statsig(dir string) ([]Case, error) {
	v, err := LoadStatsig(dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, x := range v.Experiments {
		e := splitter.Experiment{Name: x.Experiment}
		e.Seed = x.Salt
		prev := 0
		for k, g := range x.Groups {
			e.Variants = append(e.Variants, variant(k, g.Name, float64(g.Below-prev)/10))
			prev = g.Below
		}
		for _, b := range x.AllocatedBuckets {
			e.Segments = append(e.Segments, strconv.Itoa(b))
		}
		l := oneLayer(splitter.SchemeStatsig, e)
		if len(e.Segments) > 0 {
			l.Salt = x.LayerSalt
		}
		out = append(out, Case{Vendor: splitter.SchemeStatsig, File: StatsigFile, Name: x.Test,
			Layer: l, Key: x.UserID, Want: x.Want})
	}
	return out, nil
}
