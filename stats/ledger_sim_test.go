package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// simLog is one stats partition in memory: the records of the committed
// transactions, in offset order.
type simLog struct{ recs []*kgo.Record }

// compacted returns what log compaction leaves of the log: the newest
// record of every key, in offset order, and without the tombstones when
// dropTombstones (after delete.retention.ms).
func (s *simLog) compacted(dropTombstones bool) []*kgo.Record {
	newest := map[string]int{}
	for i, r := range s.recs {
		newest[string(r.Key)] = i
	}
	var out []*kgo.Record
	for i, r := range s.recs {
		if newest[string(r.Key)] == i && (r.Value != nil || !dropTombstones) {
			out = append(out, r)
		}
	}
	return out
}

// foldRecords is what a restore of source reads from recs.
func foldRecords(t testing.TB, source string, recs []*kgo.Record) LedgerState {
	t.Helper()
	f := &restoreFold{}
	var ents []rawEntry
	for _, r := range recs {
		src, part, index, err := parseLedgerKey(r.Key)
		if err != nil {
			t.Fatalf("record key %q: %v", r.Key, err)
		}
		if string(src) != source {
			continue
		}
		if ents, err = f.record(part, index, r.Key, r.Value, -1, nil, ents[:0]); err != nil {
			t.Fatalf("fold: %v", err)
		}
	}
	return f.state(source)
}

// sameLedger says how two ledger states differ in what a reader sees:
// offset, sequence, instant and entries.
func sameLedger(got, want LedgerState) error {
	if got.Offset != want.Offset || got.Seq != want.Seq || !got.At.Equal(want.At) {
		return fmt.Errorf("offset/seq/at %d/%d/%v, want %d/%d/%v", got.Offset, got.Seq, got.At, want.Offset, want.Seq, want.At)
	}
	if len(got.Reports) != len(want.Reports) {
		return fmt.Errorf("%d reports, want %d", len(got.Reports), len(want.Reports))
	}
	for i := range got.Reports {
		if !sameReport(got.Reports[i], want.Reports[i]) {
			return fmt.Errorf("report %d: %+v, want %+v", i, got.Reports[i], want.Reports[i])
		}
	}
	if len(got.Variants) != len(want.Variants) {
		return fmt.Errorf("%d experiments, want %d", len(got.Variants), len(want.Variants))
	}
	for i, g := range got.Variants {
		w := want.Variants[i]
		if g.Layer != w.Layer || g.Experiment != w.Experiment || !slices.Equal(g.Counts, w.Counts) {
			return fmt.Errorf("experiment %d: %+v, want %+v", i, g, w)
		}
	}
	return nil
}

// driver runs a source's commits through a Ledger into a simLog, with
// its own clock and counters.
type driver struct {
	t       testing.TB
	l       *Ledger
	log     *simLog
	now     time.Time
	offset  int64
	budgets []string
	counts  map[string]flow.Report
	rng     *rand.Rand

	written  int // bytes written (keys and values), tombstones included
	records  int
	snapshot int // snapshot chunk records written
	deltas   int // delta records written
	deltaB   int // their bytes
	snapB    int // snapshot chunk bytes
	lastSnap int // bytes of the newest snapshot
	maxRec   int // the largest record
}

func newDriver(t testing.TB, budgets int, l *Ledger) *driver {
	d := &driver{t: t, l: l, log: &simLog{}, now: t0, counts: map[string]flow.Report{}, rng: rand.New(rand.NewPCG(1, 2))}
	for i := range budgets {
		d.budgets = append(d.budgets, fmt.Sprintf("campaign/%06d", i))
	}
	return d
}

// touch counts events on n budgets drawn at random and returns their
// reports.
func (d *driver) touch(n int) []flow.Report {
	var out []flow.Report
	for range n {
		b := d.budgets[d.rng.IntN(len(d.budgets))]
		r := d.counts[b]
		r.Budget, r.Since = b, t1
		r.Total.Offered += 3
		r.Total.Passed++
		r.InPeriod.Passed++
		if d.rng.IntN(4) == 0 {
			r.Total.Rewards += 0.5
		}
		d.counts[b] = r
		out = append(out, r)
	}
	return out
}

// commit advances the clock and offset, writes c and commits it.
func (d *driver) commit(c Changes) []*kgo.Record {
	d.t.Helper()
	d.now = d.now.Add(100 * time.Millisecond)
	d.offset += 50
	recs, err := d.l.Records(c, d.offset, d.now)
	if err != nil {
		d.t.Fatal(err)
	}
	d.account(recs)
	d.log.recs = append(d.log.recs, recs...)
	d.l.Committed()
	return recs
}

func (d *driver) account(recs []*kgo.Record) {
	snap := 0
	for _, r := range recs {
		n := len(r.Key) + len(r.Value)
		if n > d.l.cfg.recordBytes {
			d.t.Fatalf("record of %d bytes, bound %d", n, d.l.cfg.recordBytes)
		}
		if r.Partition != d.l.partition || r.Topic != d.l.topic {
			d.t.Fatalf("record to %s/%d", r.Topic, r.Partition)
		}
		d.maxRec = max(d.maxRec, n)
		d.written += n
		d.records++
		_, part, _, _ := parseLedgerKey(r.Key)
		switch {
		case r.Value == nil:
		case part == LedgerSnapshot:
			d.snapshot++
			d.snapB += n
			snap += n
		case part == LedgerDelta:
			d.deltas++
			d.deltaB += n
		}
	}
	if snap > 0 {
		d.lastSnap = snap
	}
}

func newTestLedger(t testing.TB, source string, opts ...LedgerOpt) *Ledger {
	t.Helper()
	l, err := NewLedger("stats", LedgerState{Source: source, Offset: -1}, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
