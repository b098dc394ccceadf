package sim

import (
	"fmt"
	"testing"
)

// Sparse traffic on many partitions, with lanes released when idle as the
// worker releases them, so that nearly every event opens its lane again
// from the committed counters: never over the target, and under it by no
// more than a few passes (the closing stretch aims under the ideal curve,
// and 2.5 events a second leave little to make up with at the end).
//
// Bursts after silence (every burst more than a sync interval after the
// last event, each on lanes opened again): each burst passes the lag
// behind the ideal curve, so the budget ends under its target only by
// what the first burst (a start: a token per lane) and the silence after
// the last one leave: 289 of 300, where a burst taken for a start passed
// a token per lane at most, 12 of 300 in all.
func TestSparseTraffic(t *testing.T) {
	for _, c := range []struct {
		file   string
		under  float64 // the largest shortfall, a fraction of the target
		target float64
	}{
		{"sparse-lanes.yaml", 0.06, 75},
		{"bursts.yaml", 0.05, 300},
	} {
		for _, seed := range append([]uint64{0}, seedsFrom(100, 10)...) {
			t.Run(fmt.Sprintf("%s/seed=%d", c.file, seed), func(t *testing.T) {
				b := runFile(t, c.file, seed).Budgets[0]
				t.Logf("passed %.0f of %d offered, target %.0f (%+.2f%%), max deviation %.2f%%",
					b.Achieved, b.Offered, b.Target, 100*b.FinalError, 100*b.MaxDeviation)
				if b.Target != c.target {
					t.Fatalf("target %v, want %v", b.Target, c.target)
				}
				if b.FinalError > 0 || b.FinalError < -c.under {
					t.Errorf("final error %+.4f, want within [-%.2f, 0]", b.FinalError, c.under)
				}
			})
		}
	}
}
