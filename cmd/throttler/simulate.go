package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/throttler/throttler/flow/sim"
)

var simulateCmd = &command{
	name:    "simulate",
	summary: "run a pacing scenario in virtual time and print its report",
	args:    "FILE",
	doc: `Simulates N nodes, each running its own flow controllers, in virtual
time: the traffic profiles, budgets and counter exchange (sync interval,
delay, loss) come from the scenario file FILE or --scenario FILE (YAML; see
flow/sim/testdata).
Prints one JSON report on stdout; for a scored window budget it carries the
paced offline optimum (optimum_precision: the best precision a selection
knowing the whole window reaches while as close to the ideal course as the
run) and the run's precision over it (precision_ratio). A bad scenario
exits 1 naming the field.`,
	setup: func(fs *flag.FlagSet) action {
		flagScenario := fs.String("scenario", "", "scenario `file` (YAML; or give it as the argument)")
		timeline := fs.String("timeline", "", "write the timeline CSV to `file`")
		chart := fs.String("chart", "", "write an SVG chart of achieved against ideal to `file`")
		return func(_ context.Context, e *env) error {
			scenario, err := oneFile("scenario", *flagScenario, e.args)
			if err != nil {
				return err
			}
			if err := checkOutFile("timeline", *timeline); err != nil {
				return err
			}
			if err := checkOutFile("chart", *chart); err != nil {
				return err
			}
			sc, err := sim.Load(scenario)
			if err != nil {
				var fe *sim.FieldError
				if errors.As(err, &fe) {
					return fmt.Errorf("scenario %s: %w", scenario, err)
				}
				return err
			}
			res, err := sim.Run(sc)
			if err != nil {
				return err
			}
			if err := writeFile(*timeline, res.WriteCSV); err != nil {
				return err
			}
			if err := writeFile(*chart, res.WriteSVG); err != nil {
				return err
			}
			return res.WriteJSON(e.stdout)
		}
	},
}

// writeFile writes path with fn, doing nothing when path is empty.
func writeFile(path string, fn func(w io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
