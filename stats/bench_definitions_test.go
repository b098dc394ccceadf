package stats

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/twmb/franz-go/pkg/kgo"
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

// BenchmarkViewApplyDefinitions: the cost per budget definition record of
// reading it into a View (decode and apply, no Kafka), kept whole (status
// pages) or as a digest (a worker): what a worker pays per budget of the
// cluster when it starts.
func BenchmarkViewApplyDefinitions(b *testing.B) {
	const n = 100000
	recs := make([]*kgo.Record, n)
	for k := range recs {
		key, val, err := EncodeBudgetDef(BudgetDef{Budget: flow.Budget{Name: fmt.Sprintf("light-%06d", k), Target: float64(10 + k%100), Period: time.Minute},
			At: time.Unix(1767225600, 0), Origin: "throttler-g-0123456789ab"})
		if err != nil {
			b.Fatal(err)
		}
		recs[k] = &kgo.Record{Key: key, Value: val}
	}
	for _, digests := range []bool{false, true} {
		name := "whole"
		if digests {
			name = "digests"
		}
		b.Run(name, func(b *testing.B) {
			var ents []rawEntry
			for b.Loop() {
				v := &View{}
				v.defs.digestOnly, v.defs.seed = digests, maphash.MakeSeed()
				for _, r := range recs {
					op, err := decodeOp(r, &ents)
					if err != nil {
						b.Fatal(err)
					}
					v.applyOp(&op, ents)
				}
				if got := max(len(v.defs.budgets), len(v.defs.digests)); got != n {
					b.Fatalf("%d definitions kept, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}
