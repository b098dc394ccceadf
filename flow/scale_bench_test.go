package flow

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The benchmarks of issue 9: what a tree costs as a function of the number
// of budgets B when few are active. Each compares, in the same run, the
// lazy tree with today's eager behaviour, emulated on the same code: every
// budget with a controller (and, where lanes matter, a lane on every
// source), tuned and synced one by one as the old Tune and Sync did
// (tuneAll, syncAll).

var scaleSizes = []int{1000, 10000, 100000}

const scaleActive = 100

func scaleBudgets(n int) []Budget {
	bs := make([]Budget, n)
	for i := range bs {
		bs[i] = Budget{Name: fmt.Sprintf("b%06d", i), Target: 1e7, Begin: benchT0, End: benchT0.Add(time.Hour)}
	}
	return bs
}

func scaleTree(b *testing.B, bs []Budget, opts ...Option) *Tree {
	b.Helper()
	tree, err := NewTree(bs, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return tree
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// activateAll gives every budget a controller, as every tree had before.
func activateAll(tree *Tree) {
	tree.mu.Lock()
	defer tree.mu.Unlock()
	for x := tree.defs.head; x != nil; x = x.next {
		if x.ctrl == nil {
			tree.activate(x, benchT0.UnixNano())
		}
	}
}

// tuneAll and syncAll are the old Tune and Sync: every controller.
func tuneAll(tree *Tree, now time.Time) {
	for _, c := range tree.Controllers() {
		c.mu.Lock()
		c.tuneLocked(now.UnixNano(), false)
		c.mu.Unlock()
	}
}

func syncAll(tree *Tree, now time.Time, ex Exchange) {
	var buf []Report
	for _, c := range tree.Controllers() {
		buf = ex.View(c.name, buf[:0])
		c.mu.Lock()
		c.syncLocked(now.UnixNano(), buf)
		c.mu.Unlock()
	}
}

// BenchmarkMemoryPerBudget: heap per idle budget, as a definition (lazy)
// and with a controller (eager, as before).
func BenchmarkMemoryPerBudget(b *testing.B) {
	eachSize(b, func(b *testing.B, bs []Budget, eager bool) {
		for range b.N {
			before := heapBytes()
			tree := scaleTree(b, bs)
			if eager {
				activateAll(tree)
			}
			after := heapBytes()
			b.ReportMetric(float64(after-before)/float64(len(bs)), "B/budget")
			runtime.KeepAlive(tree)
		}
	})
}

// eachSize runs f as sub-benchmarks lazy and eager at each size.
func eachSize(b *testing.B, f func(b *testing.B, bs []Budget, eager bool)) {
	for _, n := range scaleSizes {
		bs := scaleBudgets(n)
		for _, eager := range []bool{false, true} {
			mode := "lazy"
			if eager {
				mode = "eager"
			}
			b.Run(fmt.Sprintf("%s/budgets=%d", mode, n), func(b *testing.B) { f(b, bs, eager) })
		}
	}
}

// BenchmarkMemoryPerSource: heap of one more source (a partition) of a
// node whose budgets all have controllers, with lanes of the 100 active
// budgets (lazy) or of every budget (eager, as before); and per lane.
func BenchmarkMemoryPerSource(b *testing.B) {
	eachSize(b, func(b *testing.B, bs []Budget, eager bool) {
		tree := scaleTree(b, bs)
		activateAll(tree)
		lanes := scaleActive
		if eager {
			lanes = len(bs)
		}
		for i := range b.N {
			before := heapBytes()
			src, _ := tree.Open(fmt.Sprintf("s%d", i), benchT0, nil)
			for _, x := range bs[:lanes] {
				src.Lane(x.Name)
			}
			after := heapBytes()
			b.ReportMetric(float64(after-before), "B/source")
			b.ReportMetric(float64(after-before)/float64(lanes), "B/lane")
			tree.Close(src, benchT0)
		}
	})
}

// scaleNode is a node of B budgets whose 100 active ones have lanes on 4
// sources and peers on the exchange; eager gives every budget a lane on
// the first source (and so a controller), as before.
func scaleNode(b *testing.B, bs []Budget, eager bool) (*Tree, []*Lane, *MemoryExchange) {
	b.Helper()
	ex := &MemoryExchange{}
	tree := scaleTree(b, bs, Peers(ex))
	var lanes []*Lane
	for s := range 4 {
		src, _ := tree.Open(fmt.Sprintf("p%d", s), benchT0, nil)
		for _, x := range bs[:scaleActive] {
			lanes = append(lanes, src.Lane(x.Name))
		}
		if eager && s == 0 {
			for _, x := range bs[scaleActive:] {
				src.Lane(x.Name)
			}
		}
	}
	var peers []Report
	for _, x := range bs[:scaleActive] {
		for p := range 4 {
			peers = append(peers, Report{Budget: x.Name, Source: fmt.Sprintf("q%d", p), At: benchT0, Since: benchT0,
				Total: Counters{Offered: 1000, Passed: 10}, InPeriod: Counters{Offered: 1000, Passed: 10}})
		}
	}
	_ = ex.Publish(peers)
	return tree, lanes, ex
}

// BenchmarkTune: one tune round with 100 active budgets, each with an
// event on each of its 4 lanes since the last round. Eager: the old Tune
// (every controller). Lazy: Tree.Tune (the busy ones).
func BenchmarkTune(b *testing.B) {
	benchRound(b, func(tree *Tree, now time.Time, _ Exchange, eager bool) {
		if eager {
			tuneAll(tree, now)
		} else {
			tree.Tune(now)
		}
	})
}

// BenchmarkSync: the same for a sync round, reading peers from an
// in-memory exchange.
func BenchmarkSync(b *testing.B) {
	benchRound(b, func(tree *Tree, now time.Time, ex Exchange, eager bool) {
		if eager {
			syncAll(tree, now, ex)
		} else {
			tree.Sync(now, ex)
		}
	})
}

func benchRound(b *testing.B, round func(*Tree, time.Time, Exchange, bool)) {
	eachSize(b, func(b *testing.B, bs []Budget, eager bool) {
		tree, lanes, ex := scaleNode(b, bs, eager)
		now := benchT0
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			now = now.Add(100 * time.Millisecond)
			for _, l := range lanes {
				l.Decide(now, 0)
			}
			round(tree, now, ex, eager)
		}
	})
}

// BenchmarkLaneOpenRelease: a lane opened on a budget's first event on a
// source, then released, among 100,000 budgets; "activate" also creates
// (and later drops) the budget's controller, reading its peers.
func BenchmarkLaneOpenRelease(b *testing.B) {
	bs := scaleBudgets(100000)
	for _, activate := range []bool{false, true} {
		name := "lane"
		if activate {
			name = "lane+controller"
		}
		b.Run(name, func(b *testing.B) {
			ex := &MemoryExchange{}
			tree := scaleTree(b, bs, Peers(ex), DropAfter(time.Nanosecond))
			keep, _ := tree.Open("keep", benchT0, nil)
			if !activate {
				for _, x := range bs {
					keep.Lane(x.Name)
				}
			}
			src, _ := tree.Open("p", benchT0, nil)
			names := make([][]byte, len(bs))
			for i, x := range bs {
				names[i] = []byte(x.Name)
			}
			now := benchT0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				now = now.Add(time.Millisecond)
				src.Get(names[i%len(names)], now)
				src.Release(now, 0)
				if activate && i%1000 == 999 {
					tree.Tune(now.Add(time.Millisecond)) // drops the controllers
				}
			}
		})
	}
}

// BenchmarkOpenSource: a source opened, its first lane, and closed. Eager
// (as before) opened a lane of every budget at Open.
func BenchmarkOpenSource(b *testing.B) {
	eachSize(b, func(b *testing.B, bs []Budget, eager bool) {
		tree := scaleTree(b, bs)
		activateAll(tree)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			src, _ := tree.Open("p", benchT0, nil)
			src.Lane(bs[0].Name)
			if eager {
				for _, x := range bs {
					src.Lane(x.Name)
				}
			}
			tree.Close(src, benchT0)
		}
	})
}

// BenchmarkApply: 100 changed targets into 100,000 budgets, by Apply, and
// by Update with the whole set (as before), each followed by the Refresh
// of a source with lanes of the 100 active budgets (10 of them changed).
func BenchmarkApply(b *testing.B) {
	bs := scaleBudgets(100000)
	for _, whole := range []bool{false, true} {
		name := "Apply"
		if whole {
			name = "Update"
		}
		b.Run(name+"/changes=100/budgets=100000", func(b *testing.B) {
			tree := scaleTree(b, bs)
			src, _ := tree.Open("p", benchT0, nil)
			for _, x := range bs[:scaleActive] {
				src.Lane(x.Name)
			}
			set := append([]Budget(nil), bs...)
			cs := make([]Change, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for k := range cs { // budgets 90..189: 10 of them have lanes
					j := 90 + k
					set[j].Target = float64(2e7 + i)
					cs[k] = Change{Budget: set[j]}
				}
				var err error
				if whole {
					_, err = tree.Update(set, benchT0)
				} else {
					_, err = tree.Apply(cs, benchT0)
				}
				if err != nil {
					b.Fatal(err)
				}
				src.Refresh(benchT0, nil)
			}
		})
	}
}

// sliceExchange is an Exchange whose View copies a budget's reports from
// one slice sorted by source, as the stats view does; Advance makes every
// report newer, as the sources' ledgers do at each commit.
type sliceExchange struct{ byBudget map[string][]Report }

func (x *sliceExchange) Publish([]Report) error { return nil }

func (x *sliceExchange) View(budget string, dst []Report) []Report {
	return append(dst, x.byBudget[budget]...)
}

// advance moves every report to at, each source having offered off more
// and passed a tenth of that.
func (x *sliceExchange) advance(at time.Time, off uint64) {
	for _, rs := range x.byBudget {
		for i := range rs {
			r := &rs[i]
			r.At = at
			r.Total.Offered += off
			r.Total.Passed += off / 10
			r.InPeriod = r.Total
		}
	}
}

// BenchmarkActiveRounds: a tune and a sync round (one sync interval) of a
// node whose budgets are all active, as in `throttler bench --budgets N`:
// 12 sources, each budget with lanes on 4 of them and reports of all 12
// in the exchange (the other 8 its peers, as after their lanes closed),
// every report newer at each round, and a quarter of the budgets with an
// event on each lane since the last round. ns/op is one round of each.
func BenchmarkActiveRounds(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("budgets=%d", n), func(b *testing.B) {
			bs := scaleBudgets(n)
			ex := &sliceExchange{byBudget: map[string][]Report{}}
			tree := scaleTree(b, bs, Peers(ex))
			var srcs []*Source
			for s := range 12 {
				src, _ := tree.Open(fmt.Sprintf("p%02d", s), benchT0, nil)
				srcs = append(srcs, src)
			}
			lanes := make([][]*Lane, n)
			for i, x := range bs {
				rs := make([]Report, 12)
				for s := range rs {
					rs[s] = Report{Budget: x.Name, Source: fmt.Sprintf("p%02d", s), At: benchT0, Since: benchT0}
				}
				ex.byBudget[x.Name] = rs
				for k := range 4 {
					lanes[i] = append(lanes[i], srcs[(i+k)%12].Lane(x.Name))
				}
			}
			now := benchT0
			b.ReportAllocs()
			b.ResetTimer()
			for it := range b.N {
				now = now.Add(100 * time.Millisecond)
				for i := it % 4; i < n; i += 4 {
					for _, l := range lanes[i] {
						l.Decide(now, 0)
					}
				}
				ex.advance(now.Add(-50*time.Millisecond), 10)
				tree.Tune(now)
				tree.Sync(now, nil)
			}
		})
	}
}

// BenchmarkClusterSecond: one second of a node of a three-node cluster of
// 48 sources, as `throttler scale` runs it: 100 busy budgets, each with an
// event on each of the node's 16 lanes every tune round and reports from
// the 32 sources of its peers, renewed every sync interval; a second is
// nine Tunes and a Sync. Reported per second of rounds.
func BenchmarkClusterSecond(b *testing.B) {
	const own, peers, rounds = 16, 32, 10
	bs := scaleBudgets(1000)
	ex := &MemoryExchange{}
	tree := scaleTree(b, bs, Peers(ex))
	var lanes []*Lane
	for s := range own {
		src, _ := tree.Open(fmt.Sprintf("p%02d", s), benchT0, nil)
		for _, x := range bs[:scaleActive] {
			lanes = append(lanes, src.Lane(x.Name))
		}
	}
	reps := make([]Report, 0, scaleActive*peers)
	publish := func(at time.Time, k uint64) {
		reps = reps[:0]
		for _, x := range bs[:scaleActive] {
			for p := range peers {
				c := Counters{Offered: 10 * k, Passed: 5 * k}
				reps = append(reps, Report{Budget: x.Name, Source: fmt.Sprintf("q%02d", p), At: at, Since: benchT0, Total: c, InPeriod: c})
			}
		}
		if err := ex.Publish(reps); err != nil {
			b.Fatal(err)
		}
	}
	now := benchT0
	var k uint64
	second := func() {
		for r := 1; r <= rounds; r++ {
			now = now.Add(100 * time.Millisecond)
			for _, l := range lanes {
				l.Decide(now, 0)
			}
			if r < rounds {
				tree.Tune(now)
				continue
			}
			k++
			publish(now.Add(-50*time.Millisecond), k)
			tree.Sync(now, ex)
		}
	}
	for range 10 { // past the warm-up
		second()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		second()
	}
}
