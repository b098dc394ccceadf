package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func sample() *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/throttler/throttler", Version: "v1.2.0"},
		Deps: []*debug.Module{
			{Path: "github.com/twmb/franz-go/pkg/kadm", Version: "v1.19.0"},
			{Path: "github.com/twmb/franz-go", Version: "v1.22.2"},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-28T09:40:57Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
}

func TestFromBuildInfo(t *testing.T) {
	i := fromBuildInfo(sample(), "", "", "")
	want := Info{Version: "v1.2.0", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-11-28T09:40:57Z",
		Modified: true, GoVersion: "go1.26.8", FranzGo: "v1.22.2"}
	if i != want {
		t.Fatalf("got %+v\nwant %+v", i, want)
	}
	if got := i.Short(); got != "throttler v1.2.0 (commit 0123456789ab-dirty, go1.26.8)" {
		t.Errorf("Short() = %q", got)
	}
	for _, part := range []string{"throttler v1.2.0\n", "commit:      0123456789abcdef0123456789abcdef01234567 (with uncommitted changes)",
		"commit time: 2026-11-28T09:40:57Z", "go:          go1.26.8", "franz-go:    v1.22.2"} {
		if !strings.Contains(i.String(), part) {
			t.Errorf("String() lacks %q:\n%s", part, i)
		}
	}
}

func TestLinkerValuesWin(t *testing.T) {
	i := fromBuildInfo(sample(), "v9.9.9", "feedface", "2027-01-01T00:00:00Z")
	if i.Version != "v9.9.9" || i.Revision != "feedface" || i.Modified || i.Time != "2027-01-01T00:00:00Z" || i.FranzGo != "v1.22.2" {
		t.Fatalf("got %+v", i)
	}
}

func TestNoBuildInfo(t *testing.T) {
	i := fromBuildInfo(nil, "", "", "")
	if i.Version != "(devel)" || i.ShortRevision() != "unknown" || !strings.Contains(i.String(), "commit:      unknown (built without VCS information)") {
		t.Fatalf("got %+v:\n%s", i, i)
	}
	// A test binary has build info (without franz-go, which this test
	// does not link) but no VCS stamp.
	if g := Get(); g.GoVersion == "" {
		t.Errorf("Get() = %+v: no Go version", g)
	}
}

func TestCollector(t *testing.T) {
	c := collector(fromBuildInfo(sample(), "", "", ""))
	const want = `
# HELP throttler_build_info The build of throttler this process runs (always 1): its version, commit and Go version.
# TYPE throttler_build_info gauge
throttler_build_info{goversion="go1.26.8",revision="0123456789ab-dirty",version="v1.2.0"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
