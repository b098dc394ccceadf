package demo

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// watcher follows the cluster's counters in a stats View (cluster-wide,
// as every worker sees them) and the workers' controllers, samples each
// budget's achieved amount against its ideal curve, and prints the live
// progress table.
type watcher struct {
	view       *stats.View
	trees      []*flow.Tree
	budgets    []config.Budget
	begin, end time.Time
	samples    map[string][]Sample
	lines      int  // lines of the last table, for redrawing
	redraw     bool // move the cursor up over the last table (terminals only)
}

// Sample is one budget's cluster-wide achieved amount (passes, or rewards
// for a reward budget) and the ideal amount at the same instant.
type Sample struct {
	At       time.Time
	Achieved float64
	Ideal    float64
}

// totals sums the view's reports of a budget: the achieved amount and the
// offered events in the window, and the instant they stand for (the
// reports' instants, weighted by the traffic of their sources).
func (w *watcher) totals(b config.Budget) (achieved, offered float64, at time.Time) {
	var wsum, tsum float64
	for _, r := range w.view.View(b.Name, nil) {
		if b.Kind == config.KindRewards {
			achieved += r.InPeriod.Rewards
		} else {
			achieved += float64(r.InPeriod.Passed)
		}
		offered += float64(r.InPeriod.Offered)
		wt := float64(r.InPeriod.Offered) + r.InPeriod.Rewards + 1
		wsum += wt
		tsum += wt * float64(r.At.UnixNano()-w.begin.UnixNano())
	}
	if wsum == 0 {
		return 0, 0, time.Now()
	}
	return achieved, offered, w.begin.Add(time.Duration(tsum / wsum))
}

// ideal is the ideal achieved amount of b at t: its target spread evenly
// over its window.
func ideal(b config.Budget, t time.Time) float64 {
	f := float64(t.Sub(b.Begin)) / float64(b.End.Sub(b.Begin))
	return b.Target * math.Min(1, math.Max(0, f))
}

// sample records every budget's achieved and ideal amounts.
func (w *watcher) sample() {
	for _, b := range w.budgets {
		a, _, at := w.totals(b)
		if at.Before(w.begin) {
			continue
		}
		w.samples[b.Name] = append(w.samples[b.Name], Sample{At: at, Achieved: a, Ideal: ideal(b, at)})
	}
}

// snapshots averages the workers' controllers of a budget: the working
// pass rate and the score cut (NaN when no worker has one).
func (w *watcher) snapshots(name string) (passRate, cut float64) {
	var n, nc float64
	for _, t := range w.trees {
		c := t.Controller(name)
		if c == nil {
			continue
		}
		s := c.Snapshot()
		if s.At.IsZero() {
			continue
		}
		passRate += s.WorkingPassRate
		n++
		if !math.IsInf(s.Cut, 0) && !math.IsNaN(s.Cut) {
			cut += s.Cut
			nc++
		}
	}
	if n > 0 {
		passRate /= n
	}
	if nc == 0 {
		return passRate, math.NaN()
	}
	return passRate, cut / nc
}

// progress prints the live table.
func (w *watcher) progress(out io.Writer, now time.Time, produced int64) {
	var b strings.Builder
	switch {
	case now.Before(w.begin):
		fmt.Fprintf(&b, "budgets begin in %.0fs · %d events in the input topic\n", w.begin.Sub(now).Seconds(), produced)
	default:
		left := max(w.end.Sub(now), 0)
		fmt.Fprintf(&b, "+%.0fs of %.0fs · %.0fs left · %d events in the input topic\n",
			min(now.Sub(w.begin), w.end.Sub(w.begin)).Seconds(), w.end.Sub(w.begin).Seconds(), left.Seconds(), produced)
	}
	var tb table
	tb.add("budget", "kind", "target", "achieved", "ideal", "of target", "vs ideal", "pass rate (seen)", "score cut")
	for _, bg := range w.budgets {
		a, off, at := w.totals(bg)
		id := ideal(bg, at)
		pr, cut := w.snapshots(bg.Name)
		name := bg.Name
		if bg.Parent != "" {
			name = "  " + name
		}
		cutS := "-"
		if bg.Scored && !math.IsNaN(cut) {
			cutS = fmt.Sprintf("%.3f", cut)
		}
		seen := "-"
		if off > 0 && bg.Kind != config.KindRewards {
			seen = fmt.Sprintf("%.1f%% (%.1f%%)", 100*pr, 100*a/off)
		} else if off > 0 {
			seen = fmt.Sprintf("%.1f%%", 100*pr)
		}
		tb.add(name, string(bg.Kind), f0(bg.Target), f0(a), f0(id), fmt.Sprintf("%.1f%%", 100*a/bg.Target),
			fmt.Sprintf("%+.2f%%", 100*(a-id)/bg.Target), seen, cutS)
	}
	tb.write(&b)
	text := b.String()
	switch {
	case w.redraw:
		// Up over the last table, clear to the end of the screen, and
		// no line wrapping meanwhile: a line wider than the terminal is
		// cut, not wrapped, so the count of lines to go up stays right.
		if w.lines > 0 {
			fmt.Fprintf(out, "\x1b[%dA\x1b[J", w.lines)
		}
		io.WriteString(out, "\x1b[?7l"+text+"\x1b[?7h") //nolint:errcheck // progress is best effort
	default:
		io.WriteString(out, text+"\n") //nolint:errcheck
	}
	w.lines = strings.Count(text, "\n")
}

// f0 formats a count.
func f0(x float64) string { return fmt.Sprintf("%.0f", x) }

// table is a plain-text table: the first column left-aligned, the others
// right-aligned, two spaces apart. No escape codes.
type table struct{ rows [][]string }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			switch {
			case i == 0:
				line.WriteString(c + pad)
			default:
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// final samples the view once more and keeps each budget's totals in
// res, as the stats topic has them at the end.
func (w *watcher) final(res *Result, budgets []config.Budget) {
	w.sample()
	res.viewFinal = map[string]float64{}
	for _, bg := range budgets {
		a, off, _ := w.totals(bg)
		res.viewFinal[bg.Name] = a
		res.viewOffered = append(res.viewOffered, off)
	}
}
