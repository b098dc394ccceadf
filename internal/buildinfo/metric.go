package buildinfo

import "github.com/prometheus/client_golang/prometheus"

// Collector returns the gauge throttler_build_info, always 1, whose labels
// say which build runs: version, revision (ShortRevision) and goversion.
// One series per process: no label varies with users or traffic.
func Collector() prometheus.Collector {
	return collector(Get())
}

func collector(i Info) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "throttler_build_info",
		Help: "The build of throttler this process runs (always 1): its version, commit and Go version.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(i.Version, i.ShortRevision(), orUnknown(i.GoVersion)).Set(1)
	return g
}
