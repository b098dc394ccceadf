package splitter

// SRM check thresholds shared by the worker and `throttler status`.
const (
	// SRMAlpha is the p-value below which a split is flagged as a sample
	// ratio mismatch.
	SRMAlpha = 0.001
	// SRMMinEvents is the fewest units (events, or the keys the worker
	// counts) an experiment must have before it is checked. Pearson's chi-square p-value is accurate once every
	// variant expects at least 5 events (CheckSRM also requires that); at
	// 1000 events a 50/50 split is flagged when a variant is off by more
	// than about 5 points (3.29 standard deviations of 1.6 points), so the
	// check sees a broken arm after a few thousand events while it stays
	// quiet through the first seconds of a run, when a few partitions'
	// counts stand for the whole cluster.
	SRMMinEvents = 1000
)

// SRMResult is the outcome of CheckSRM.
type SRMResult struct {
	N       uint64  // events counted
	Chi2    float64 // Pearson's statistic (0 when not Checked)
	P       float64 // its p-value (1 when not Checked)
	Checked bool    // enough events to test: N >= SRMMinEvents and every expected count >= 5
	// Mismatch is Checked && P < SRMAlpha.
	Mismatch bool
}

// CheckSRM runs SRM on observed counts against weights (see SRM) when
// there are enough events, and says whether the split is a mismatch.
func CheckSRM(observed []uint64, weights []float64) SRMResult {
	var r SRMResult
	var w float64
	for i, o := range observed {
		r.N += o
		w += weights[i]
	}
	r.P = 1
	if r.N < SRMMinEvents || len(observed) < 2 {
		return r
	}
	for _, x := range weights {
		if float64(r.N)*x/w < 5 {
			return r
		}
	}
	r.Checked = true
	r.Chi2, r.P = SRM(observed, weights)
	r.Mismatch = r.P < SRMAlpha
	return r
}
