package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/stats"
)

// PassTimeline reads the committed ledgers in the stats topic and returns,
// per second of the reports' instants, the passes of budget each producer
// (a worker's transactional producer id) committed, and the running total:
// where a run that overspent took its passes, and which worker took them.
func PassTimeline(ctx context.Context, t *testing.T, addr, statsTopic, budget string) string {
	t.Helper()
	type point struct {
		at       time.Time
		passed   uint64
		producer int64
	}
	bySource := map[string][]point{}
	for _, r := range ReadTopics(ctx, t, addr, statsTopic)[statsTopic] {
		if len(r.Key) == 0 || stats.Kind(r.Key[0]) != stats.KindLedger || r.Value == nil {
			continue
		}
		rec, err := stats.DecodeLedger(r.Key, r.Value)
		if err != nil {
			continue
		}
		for _, rep := range rec.Reports {
			if rep.Budget == budget {
				bySource[rec.Source] = append(bySource[rec.Source], point{rec.At, rep.Total.Passed, r.ProducerID})
			}
		}
	}
	type cell struct {
		sec      int64
		producer int64
	}
	passes := map[cell]uint64{}
	var producers []int64
	var first, last int64
	for _, pts := range bySource {
		slices.SortFunc(pts, func(a, b point) int { return a.at.Compare(b.at) })
		var prev uint64
		for _, p := range pts {
			if p.passed <= prev {
				continue
			}
			s := p.at.Unix()
			passes[cell{s, p.producer}] += p.passed - prev
			prev = p.passed
			if !slices.Contains(producers, p.producer) {
				producers = append(producers, p.producer)
			}
			if first == 0 || s < first {
				first = s
			}
			last = max(last, s)
		}
	}
	slices.Sort(producers)
	var b strings.Builder
	fmt.Fprintf(&b, "passes of %s by second (UTC) and producer id %v, and the running total:\n", budget, producers)
	var total uint64
	for s := first; first != 0 && s <= last; s++ {
		fmt.Fprintf(&b, "  %s", time.Unix(s, 0).UTC().Format("15:04:05"))
		for _, p := range producers {
			n := passes[cell{s, p}]
			total += n
			fmt.Fprintf(&b, " %6d", n)
		}
		fmt.Fprintf(&b, "  %7d\n", total)
	}
	return b.String()
}
