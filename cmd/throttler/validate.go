package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/throttler/throttler/config"
)

var validateCmd = &command{
	name:    "validate",
	summary: "check a worker config file and list every problem in it",
	args:    "FILE",
	doc: `Loads the config file FILE (or --config FILE), applies its defaults and
validates it. Prints "ok" and exits 0 when it is valid; otherwise prints
every problem at once, one per line as "path: reason (line N)" in the
order of the file's lines, and exits 1: values of the wrong type, unknown
fields (with the field a misspelling likely meant: "did you mean
` + "`begin`" + `?"), repeated keys, required fields left out ("is required") and
every rule the values break.`,
	setup: func(fs *flag.FlagSet) action {
		flagPath := fs.String("config", "", "config `file` to check (or give it as the argument)")
		return func(_ context.Context, e *env) error {
			path, err := oneFile("config", *flagPath, e.args)
			if err != nil {
				return err
			}
			_, err = config.Load(path)
			var ps config.Problems
			switch {
			case err == nil:
				fmt.Fprintln(e.stdout, "ok")
				return nil
			case errors.As(err, &ps):
				for _, p := range ps {
					fmt.Fprintln(e.stdout, p.Error())
				}
				return exitCode(exitFailure)
			}
			return err // unreadable file
		}
	},
}
