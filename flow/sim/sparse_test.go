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
func TestSparseTraffic(t *testing.T) {
	const under = 0.06 // the largest shortfall, a fraction of the target
	for _, seed := range append([]uint64{0}, seedsFrom(100, 10)...) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			b := runFile(t, "sparse-lanes.yaml", seed).Budgets[0]
			t.Logf("passed %.0f of %d offered, target %.0f (%+.2f%%), max deviation %.2f%%",
				b.Achieved, b.Offered, b.Target, 100*b.FinalError, 100*b.MaxDeviation)
			if b.Target != 75 {
				t.Fatalf("target %v, want 75", b.Target)
			}
			if b.FinalError > 0 || b.FinalError < -under {
				t.Errorf("final error %+.4f, want within [-%.2f, 0]", b.FinalError, under)
			}
		})
	}
}
