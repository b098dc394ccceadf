package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/splitter"
)

var assignCmd = &command{
	name:    "assign",
	summary: "show which experiment and variant each key gets in every layer, and its bucket (no Kafka)",
	args:    "FILE KEY [KEY...]",
	doc: `Loads the layers of the config file FILE (or --config FILE, then every
argument is a key) and prints, for each key and each layer, the
experiment and variant the key is in (none when no experiment of the layer
holds it), the layer's hash scheme and the key's bucket: the scheme's raw
value that decided it (throttler: the layer bucket, 0 to 9999; growthbook:
GrowthBook's hash in [0, 1); optimizely: the bucket, 0 to 9999; statsig: the
user bucket of the experiment's salt, 0 to 999; unleash: the variant value,
1 to the total weight). It answers "which variant did user X get, and why?"
with the arithmetic the workers use, and never connects to Kafka.

--json prints one JSON object per line, {"key", "layer", "scheme",
"experiment", "variant", "bucket"}, with null experiment and variant when the
key is in no experiment of the layer, and a null bucket when there is none
to show (a vendor layer of several experiments that all leave the key out,
an empty key in growthbook and unleash). docs/assignment.md describes the
schemes. Exit status 0 when it printed, 1 for a config file that cannot be
read or is invalid (its problems are printed as by validate), 2 for a bad
flag or no key.`,
	setup: func(fs *flag.FlagSet) action {
		flagPath := fs.String("config", "", "worker config `file` whose layers assign the keys (or give it as the first argument)")
		asJSON := fs.Bool("json", false, "print one JSON object per key and layer instead of a table")
		return func(_ context.Context, e *env) error {
			path, keys, err := fileArg("config", *flagPath, e.args)
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				return &usageError{"no key: give one or more keys after the file"}
			}
			c, err := config.Load(path)
			var ps config.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					fmt.Fprintln(e.stderr, p.Error())
				}
				return exitCode(exitFailure)
			}
			if err != nil {
				return err
			}
			sp, err := splitter.New(c.Layers)
			if err != nil { // validated by Load
				return err
			}
			return printPlacements(e.stdout, sp, keys, *asJSON)
		}
	},
}

// placementJSON is one line of `throttler assign --json`.
type placementJSON struct {
	Key        string   `json:"key"`
	Layer      string   `json:"layer"`
	Scheme     string   `json:"scheme"`
	Experiment *string  `json:"experiment"`
	Variant    *string  `json:"variant"`
	Bucket     *float64 `json:"bucket"`
}

// printPlacements prints where each key falls in every layer of sp.
func printPlacements(w io.Writer, sp *splitter.Splitter, keys []string, asJSON bool) error {
	var tw *tabwriter.Writer
	var enc *json.Encoder
	if asJSON {
		enc = json.NewEncoder(w)
	} else {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tLAYER\tSCHEME\tEXPERIMENT\tVARIANT\tBUCKET")
	}
	var ps []splitter.Placement
	for _, key := range keys {
		ps = sp.Place([]byte(key), ps[:0])
		for _, p := range ps {
			line := placementJSON{Key: key, Layer: p.Layer, Scheme: p.Scheme}
			if p.In {
				line.Experiment, line.Variant = &p.Experiment, &p.Variant
			}
			if p.HasBucket {
				line.Bucket = &p.Bucket
			}
			if asJSON {
				if err := enc.Encode(line); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", strconv.Quote(key), p.Layer, p.Scheme,
				orDash(line.Experiment), orDash(line.Variant), bucketText(line.Bucket))
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func bucketText(b *float64) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatFloat(*b, 'g', -1, 64)
}
