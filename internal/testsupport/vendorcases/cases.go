// Package vendorcases turns the experiment platforms' published test
// vectors (splitter/testdata, see its README) into splitter
// configurations, keys and expected variants, so that the splitter's
// tests and the `throttler assign` tests run the same cases. It is test
// support: nothing in the product imports it.
package vendorcases

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/throttler/throttler/splitter"
)

// Case is one published assignment: a key, an experiment alone in its
// layer, and the variant the vendor's SDK gives the key.
type Case struct {
	Vendor string // one of the vendor schemes
	File   string // the test data file, relative to the testdata directory
	Name   string // the vendor's name or description of the case
	Layer  splitter.Layer
	Key    string
	// Want is the variant the key gets, "" when it is in no experiment.
	Want string
	// Refused says that the splitter refuses the configuration (a
	// GrowthBook experiment of one variation, which the SDK never runs):
	// the key is then in no experiment, as the vendor wants.
	Refused bool
}

// Load returns every assignment case of the test data directory dir
// (splitter/testdata), vendor by vendor in a fixed order.
func Load(dir string) ([]Case, error) {
	var all []Case
	for _, load := range []func(string) ([]Case, error){growthBook, optimizely, statsig, unleash} {
		cs, err := load(dir)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}

// readJSON decodes the file dir/name into v.
func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// oneLayer is a layer named after the vendor holding one experiment.
func oneLayer(vendor string, e splitter.Experiment) splitter.Layer {
	e.Hash = vendor
	return splitter.Layer{Name: vendor, Experiments: []splitter.Experiment{e}}
}

// variant is the k-th variant of an experiment, with a topic of its own.
func variant(k int, name string, weight float64) splitter.Variant {
	return splitter.Variant{Name: name, Weight: weight, Topic: "variant-" + strconv.Itoa(k)}
}
