package stats

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// BenchmarkDefinitionMemory: heap per budget definition a View holds, kept
// whole (what status pages read) or as a digest (DigestDefinitions, what a
// worker keeps), after applying the definition records of 100,000 period
// budgets.
func BenchmarkDefinitionMemory(b *testing.B) {
	const n = 100000
	recs := make([]Record, n)
	for k := range recs {
		key, val, err := EncodeBudgetDef(BudgetDef{Budget: flow.Budget{Name: fmt.Sprintf("light-%06d", k), Target: float64(10 + k%100), Period: time.Minute},
			At: time.Unix(1767225600, 0), Origin: "throttler-g-0123456789ab"})
		if err != nil {
			b.Fatal(err)
		}
		if recs[k], err = DecodeRecord(key, val); err != nil {
			b.Fatal(err)
		}
	}
	for _, digests := range []bool{false, true} {
		name := "whole"
		if digests {
			name = "digests"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				before := heapInUse()
				d := definitions{digestOnly: digests, seed: maphash.MakeSeed()}
				for k := range recs {
					d.apply(&recs[k])
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/n, "B/budget")
				runtime.KeepAlive(&d)
			}
		})
	}
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
