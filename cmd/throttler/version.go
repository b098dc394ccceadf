package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/throttler/throttler/internal/buildinfo"
)

var versionCmd = &command{
	name:    "version",
	summary: "print the version, commit, Go and franz-go versions of this binary",
	doc: `Prints the module version (a tag, a pseudo-version, or "(devel)" for a
build from a checkout), the commit the binary was built from and its time
(recorded by 'go build' in a git checkout; "unknown" otherwise), the Go
version and the franz-go version. 'throttler --version' and the --version
flag of every command print the same. --json prints one JSON object:
{"version","revision","time","modified","go_version","franz_go_version"}.

A running worker exports the same as the gauge throttler_build_info on
/metrics (labels version, revision, goversion); the dashboard shows it in
its footer.`,
	setup: func(fs *flag.FlagSet) action {
		asJSON := fs.Bool("json", false, "print one JSON object")
		return func(_ context.Context, e *env) error {
			i := buildinfo.Get()
			if *asJSON {
				out, err := json.Marshal(i)
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, string(out))
				return nil
			}
			fmt.Fprint(e.stdout, i)
			return nil
		}
	},
}
