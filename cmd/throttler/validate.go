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
	doc: `Loads the config file, applies its defaults and validates it. Prints "ok"
and exits 0 when it is valid; otherwise prints every problem, one per line
as "path: reason (line N)", and exits 1. Deprecated settings are printed on
stderr the same way; they do not make the file invalid.`,
	setup: func(fs *flag.FlagSet) action {
		path := fs.String("config", "", "config `file` to check (required)")
		return func(_ context.Context, e *env) error {
			if *path == "" {
				return &usageError{"flag -config is required"}
			}
			c, err := config.Load(*path)
			var ps config.Problems
			switch {
			case err == nil:
				for _, d := range c.Deprecated() {
					fmt.Fprintln(e.stderr, d.Error())
				}
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
