package flow

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkConversionFit fits a full history (240 samples a second apart,
// 100 passes a second, 10% converting after exponential delays of mean
// 4 s) with the default longest delay (30 s): the work a reward budget's
// controller does at every sync.
func BenchmarkConversionFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newConversion(240)
	var pending []float64
	passed, rewards := 0.0, 0.0
	for s := 1; s <= 240; s++ {
		for range 100 {
			passed++
			if rng.Float64() < 0.1 {
				pending = append(pending, float64(s-1)+rng.Float64()+4*rng.ExpFloat64())
			}
		}
		kept := pending[:0]
		for _, at := range pending {
			if at <= float64(s) {
				rewards++
			} else {
				kept = append(kept, at)
			}
		}
		pending = kept
		c.add(int64(s)*int64(time.Second), passed, rewards)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.fit(int64(30 * time.Second))
	}
	if c.ratio == 0 {
		b.Fatal("no fit")
	}
}
