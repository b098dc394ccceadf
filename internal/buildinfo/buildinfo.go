// Package buildinfo says which build of throttler is running: the module
// version, the commit it was built from and that commit's time (what the
// Go toolchain records in the binary, runtime/debug.ReadBuildInfo), the
// Go version and the franz-go version. `throttler version` prints it,
// /metrics exports it as throttler_build_info, the dashboard shows it.
//
// A binary built outside a git checkout (a Docker build context without
// .git, or with -buildvcs=false) has no commit; a release build can give
// one with the linker:
//
//	go build -ldflags "-X github.com/throttler/throttler/internal/buildinfo.version=v1.2.0 \
//	  -X github.com/throttler/throttler/internal/buildinfo.revision=$(git rev-parse HEAD) \
//	  -X github.com/throttler/throttler/internal/buildinfo.revisionTime=$(git log -1 --format=%cI)" ./cmd/throttler
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
)

// Set with -ldflags -X; each one, when not empty, replaces what the build
// info says.
var version, revision, revisionTime string

// franzGo is the module path of the Kafka client.
const franzGo = "github.com/twmb/franz-go"

// Info describes a build. Empty fields are unknown.
type Info struct {
	// Version is the main module's version: a tag (v1.2.0), a
	// pseudo-version, or "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision is the commit the binary was built from.
	Revision string `json:"revision"`
	// Time is the commit's time, RFC 3339.
	Time string `json:"time"`
	// Modified says the checkout had uncommitted changes.
	Modified bool `json:"modified"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// FranzGo is the version of github.com/twmb/franz-go in the binary.
	FranzGo string `json:"franz_go_version"`
}

// Get returns the running binary's build.
var Get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version, revision, revisionTime)
})

// fromBuildInfo reads bi (nil when the binary has none), the linker's
// values replacing its own where given.
func fromBuildInfo(bi *debug.BuildInfo, ver, rev, revTime string) Info {
	var i Info
	if bi != nil {
		i.Version, i.GoVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == franzGo {
				i.FranzGo = d.Version
				if d.Replace != nil {
					i.FranzGo = d.Replace.Version
				}
			}
		}
	}
	if ver != "" {
		i.Version = ver
	}
	if rev != "" {
		i.Revision, i.Modified = rev, false
	}
	if revTime != "" {
		i.Time = revTime
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
}

// ShortRevision returns the first 12 characters of the commit, with
// "-dirty" when the checkout had changes, or "unknown".
func (i Info) ShortRevision() string {
	if i.Revision == "" {
		return "unknown"
	}
	r := i.Revision[:min(len(i.Revision), 12)]
	if i.Modified {
		r += "-dirty"
	}
	return r
}

// Short is one line: "throttler v1.2.0 (commit 0123456789ab, go1.26.8)".
func (i Info) Short() string {
	return fmt.Sprintf("throttler %s (commit %s, %s)", i.Version, i.ShortRevision(), orUnknown(i.GoVersion))
}

// String is the multi-line form `throttler version` prints.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "throttler %s\n", i.Version)
	commit := "unknown (built without VCS information)"
	if i.Revision != "" {
		commit = i.Revision
		if i.Modified {
			commit += " (with uncommitted changes)"
		}
	}
	fmt.Fprintf(&b, "  commit:      %s\n", commit)
	fmt.Fprintf(&b, "  commit time: %s\n", orUnknown(i.Time))
	fmt.Fprintf(&b, "  go:          %s\n", orUnknown(i.GoVersion))
	fmt.Fprintf(&b, "  franz-go:    %s\n", orUnknown(i.FranzGo))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
