package stats

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// Benchmarks of the coordination cost. Cost figures are counted from a
// deterministic run (records and bytes do not depend on the machine);
// ns/op is the CPU of one commit.
//
//	go test ./stats -run XXX -bench 'Ledger|ViewFold|ViewBudget' -benchmem

// commitsPerSecond turns per-commit figures into per second ones: the
// consumer commits every 100 ms under load.
const (
	commitsPerSecond = 10
	changedPerCommit = 10
)

// fill commits one report for every budget of the driver: a ledger whose
// every budget counts something, logged but not accounted. It returns
// the heap the ledger took.
func (d *driver) fill() (heap uint64) {
	var c Changes
	for _, b := range d.budgets {
		r := flow.Report{Budget: b, Since: t1, Total: flow.Counters{Offered: 30, Passed: 10}, InPeriod: flow.Counters{Passed: 1}}
		d.counts[b] = r
		c.Reports = append(c.Reports, r)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs, err := d.l.Records(c, 0, d.now)
	if err != nil {
		d.t.Fatal(err)
	}
	d.l.Committed()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	d.log.recs = append(d.log.recs, recs...) // after measuring: the records are not the ledger's
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkLedgerCommit is one source holding 1k, 10k or 100k budgets, of
// which 10 change per commit. Metrics per commit and per second (10
// commits per second), and the writer's memory per entry.
func BenchmarkLedgerCommit(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("budgets=%d", n), func(b *testing.B) {
			l := newTestLedger(b, "events/7")
			d := newDriver(b, n, l)
			writerBytes := float64(d.fill()) / float64(n)

			// Three snapshot cycles at least, counted.
			commits := 0
			for snaps := 0; snaps < 3 && commits < 400_000; commits++ {
				if isSnapshot(d.commit(Changes{Reports: d.touch(changedPerCommit)})) {
					snaps++
				}
			}
			d.log = &simLog{}
			b.ResetTimer()
			for b.Loop() {
				d.now, d.offset = d.now.Add(1), d.offset+1
				if _, err := l.Records(Changes{Reports: d.touch(changedPerCommit)}, d.offset, d.now); err != nil {
					b.Fatal(err)
				}
				l.Committed()
			}
			b.StopTimer()
			b.ReportMetric(writerBytes, "writer-B/entry")
			perCommit := float64(d.written) / float64(commits)
			b.ReportMetric(perCommit, "ledger-B/commit")
			b.ReportMetric(float64(d.records)/float64(commits), "ledger-rec/commit")
			b.ReportMetric(perCommit*commitsPerSecond, "ledger-B/s")
			b.ReportMetric(float64(d.records)/float64(commits)*commitsPerSecond, "ledger-rec/s")
			b.ReportMetric(float64(d.lastSnap), "snapshot-B")
		})
	}
}

func isSnapshot(recs []*kgo.Record) bool {
	if len(recs) == 0 {
		return false
	}
	_, part, _, _ := parseLedgerKey(recs[0].Key)
	return part == LedgerSnapshot
}

// viewRecords returns the snapshot records of sources' ledgers, each with
// perSource non-zero entries drawn at random (seeded) out of budgets.
func viewRecords(b *testing.B, sources, budgets, perSource int) (recs []*kgo.Record, entries int) {
	rng := rand.New(rand.NewPCG(5, 6))
	for s := range sources {
		src := SourceName("events", int32(s))
		l := newTestLedger(b, src)
		var c Changes
		for i, k := range rng.Perm(budgets)[:perSource] {
			name := fmt.Sprintf("campaign/%06d", k)
			c.Reports = append(c.Reports, flow.Report{Budget: name, Since: t1, Total: flow.Counters{Offered: uint64(30 + i), Passed: 10}})
		}
		r, err := l.Records(c, 100, t0)
		if err != nil {
			b.Fatal(err)
		}
		l.Committed()
		recs = append(recs, r...)
		entries += len(l.State().Reports)
	}
	return recs, entries
}

// foldAll folds records into a fresh index, as a View's reader does.
func foldAll(b testing.TB, recs []*kgo.Record) *View {
	v := &View{}
	var ents []rawEntry
	for _, r := range recs {
		op, err := decodeOp(r, &ents)
		if err != nil {
			b.Fatal(err)
		}
		v.applyOp(&op, ents)
		ents = ents[:0]
	}
	return v
}

// BenchmarkViewFold folds 48 sources' snapshots of 5,000 non-zero entries
// each (100k budgets, 5% non-zero per source) into a View: the cost of
// catching up per entry (decode and index, no Kafka), and the memory the
// View keeps per entry.
func BenchmarkViewFold(b *testing.B) {
	recs, entries := viewRecords(b, 48, 100_000, 5_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := foldAll(b, recs)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := v.Stats().Sources; got != entries {
		b.Fatalf("folded %d entries, want %d", got, entries)
	}
	perEntry := float64(after.HeapAlloc-before.HeapAlloc) / float64(entries)
	runtime.KeepAlive(v)
	b.ResetTimer()
	for b.Loop() {
		foldAll(b, recs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
	b.ReportMetric(perEntry, "view-B/entry")
	b.ReportMetric(float64(entries), "entries")
}

// BenchmarkViewBudget is View(budget) for a budget with 48 sources and one
// with the fewest, among 100k budgets: O(sources of the budget), no allocation with
// a reused dst.
func BenchmarkViewBudget(b *testing.B) {
	recs, _ := viewRecords(b, 48, 100_000, 5_000)
	wide, _ := viewRecords(b, 48, 1, 1) // "campaign/000000" in every source
	v := foldAll(b, append(recs, wide...))
	narrow, fewest := "", 48
	for name, vb := range v.led.budgets {
		if n := len(vb.entries); n < fewest || (n == fewest && name < narrow) {
			narrow, fewest = name, n
		}
	}
	for _, c := range []struct {
		budget  string
		sources int
	}{{"campaign/000000", 48}, {narrow, fewest}} {
		b.Run(fmt.Sprintf("sources=%d", c.sources), func(b *testing.B) {
			if n := len(v.View(c.budget, nil)); n != c.sources {
				b.Fatalf("%s has %d sources, want %d", c.budget, n, c.sources)
			}
			var dst []flow.Report
			for b.Loop() {
				dst = v.View(c.budget, dst[:0])
			}
		})
	}
}

// BenchmarkViewRefold folds again, into a View that holds them, 48
// sources' records of 1,000 budgets each counted on every source: the
// lookup of the steady state's fold, where each entry of a delta is found
// among its budget's 48.
func BenchmarkViewRefold(b *testing.B) {
	recs, entries := viewRecords(b, 48, 1000, 1000)
	v := foldAll(b, recs)
	var ents []rawEntry
	ops := make([]viewOp, 0, len(recs))
	for _, r := range recs {
		op, err := decodeOp(r, &ents)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, op)
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range ops {
			v.applyOp(&ops[i], ents)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
}
