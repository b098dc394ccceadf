package flow

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// benchLane returns a lane of a budget that is mid-window and pacing (the
// working pass rate strictly between 0 and 1), as on the hot path.
func benchLane(b *testing.B, tree *Tree, source string) *Lane {
	b.Helper()
	src, err := tree.Open(source, benchT0, nil)
	if err != nil {
		b.Fatal(err)
	}
	return src.Lane("campaign")
}

var benchT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func benchTree(b *testing.B) *Tree {
	b.Helper()
	tree, err := NewTree([]Budget{{Name: "campaign", Target: 1.8e6, Begin: benchT0, End: benchT0.Add(time.Hour)}})
	if err != nil {
		b.Fatal(err)
	}
	return tree
}

// warm gives the controller a traffic measurement so that it paces.
func warm(tree *Tree, l *Lane) time.Time {
	now := benchT0
	tree.Tune(now)
	for i := 0; i < 1000; i++ {
		l.Decide(now.Add(time.Duration(i)*time.Millisecond), 0)
	}
	now = now.Add(time.Second)
	tree.Tune(now)
	return now
}

// BenchmarkDecide is one pass/reject decision on the hot path. The time is
// an argument (as with rate.Limiter.AllowN): the pipeline reads the clock
// once per fetched batch, not per record.
func BenchmarkDecide(b *testing.B) {
	tree := benchTree(b)
	l := benchLane(b, tree, "p0")
	now := warm(tree, l)
	b.ReportAllocs()
	b.ResetTimer()
	passed := 0
	for i := 0; i < b.N; i++ {
		if l.Decide(now, 0).Pass {
			passed++
		}
	}
	if b.N >= 100 && (passed == 0 || passed == b.N) {
		b.Fatalf("not pacing: %d of %d passed", passed, b.N)
	}
}

// BenchmarkDecideParallel: each goroutine owns a lane (a partition) of one
// shared controller, as in the worker.
func BenchmarkDecideParallel(b *testing.B) {
	tree := benchTree(b)
	var seq atomic.Int64
	l0 := benchLane(b, tree, "warm")
	now := warm(tree, l0)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l := benchLaneNoFatal(tree, "p"+strconv.FormatInt(seq.Add(1), 10))
		for pb.Next() {
			l.Decide(now, 0)
		}
	})
}

func benchLaneNoFatal(tree *Tree, source string) *Lane {
	src, err := tree.Open(source, benchT0, nil)
	if err != nil {
		panic(err)
	}
	return src.Lane("campaign")
}

// BenchmarkReferenceXTimeRate is the reference: golang.org/x/time/rate's
// Allow with a limit that is never hit (it reads the clock itself).
func BenchmarkReferenceXTimeRate(b *testing.B) {
	lim := rate.NewLimiter(rate.Inf, 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		lim.Allow()
	}
}

// BenchmarkReferenceXTimeRateAllowN is the same limiter given the time as
// an argument, like Decide.
func BenchmarkReferenceXTimeRateAllowN(b *testing.B) {
	lim := rate.NewLimiter(rate.Limit(1e12), 1<<30)
	now := time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		lim.AllowN(now, 1)
	}
}

// BenchmarkDecideScored is a decision of a scored budget (one sketch count
// and a comparison with the cut).
func BenchmarkDecideScored(b *testing.B) {
	tree, err := NewTree([]Budget{{Name: "campaign", Target: 1.8e6, Begin: benchT0, End: benchT0.Add(time.Hour), Scored: true}})
	if err != nil {
		b.Fatal(err)
	}
	l := benchLane(b, tree, "p0")
	now := warm(tree, l)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Decide(now, float64(i&1023)/1024)
	}
}
