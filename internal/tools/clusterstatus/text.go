package clusterstatus

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/throttler/throttler/splitter"
)

// MismatchMark marks an experiment whose SRM p-value is below
// splitter.SRMAlpha in the text output.
const MismatchMark = "!! SRM"

func writeTextHead(w io.Writer, st Status) {
	fmt.Fprintf(w, "stats topic %s at %s\n\n", st.StatsTopic, st.At.Format(time.RFC3339))
	if len(st.Parked) == 0 {
		return
	}
	fmt.Fprintf(w, "PARKED PARTITIONS (%d): their ledgers cannot be restored whole; see 'throttler ledger show SOURCE' and docs/operations.md\n", len(st.Parked))
	for _, p := range st.Parked {
		fmt.Fprintf(w, "  %s (worker %s): %q\n", p.Source, p.Worker, p.Reason)
	}
	fmt.Fprintln(w)
}

// tableBlock is the number of budget rows aligned together: the table is
// written a block at a time, so that 100,000 rows are not held at once.
const tableBlock = 1000

// budgetTable writes the budgets' table a row at a time.
type budgetTable struct {
	w    io.Writer
	tw   *tabwriter.Writer
	rows int
}

func newBudgetTable(w io.Writer) *budgetTable {
	return &budgetTable{w: w, tw: tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)}
}

func (t *budgetTable) row(b Budget) error {
	if t.rows == 0 {
		fmt.Fprintln(t.tw, "BUDGET\tKIND\tTARGET\tACHIEVED\tIDEAL\tDEVIATION\tPASS RATE\tTIME LEFT\tSOURCES\tCURRENT")
	}
	t.rows++
	pr := "-"
	if b.PassRate != nil {
		pr = fmt.Sprintf("%.4f", *b.PassRate)
	}
	cur := b.Start.Format(time.RFC3339) + " .. " + b.Finish.Format(time.RFC3339)
	if b.PeriodSeconds > 0 {
		cur = "period " + cur
	}
	name, kind := printableName(b.Name), b.Kind
	if b.Delay {
		kind += " (delay)"
	}
	if b.Parent != "" {
		name += " (in " + printableName(b.Parent) + ")"
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%g\t%s\t%.1f\t%+.2f%%\t%s\t%s\t%d\t%s\n", name, kind, b.Target,
		num(b.Achieved), b.Ideal, 100*b.Deviation, pr, (time.Duration(b.TimeLeftSeconds) * time.Second).String(), b.Sources, cur)
	if t.rows%tableBlock == 0 {
		return t.tw.Flush()
	}
	return nil
}

// end ends the table (a line saying there is none when no row came) and
// the blank line after it.
func (t *budgetTable) end() error {
	if t.rows == 0 {
		fmt.Fprintln(t.tw, "no budget definitions on the stats topic (no worker has published yet)")
	}
	fmt.Fprintln(t.tw)
	return t.tw.Flush()
}

func writeExperiments(w io.Writer, xs []Experiment) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if len(xs) == 0 {
		fmt.Fprintln(tw, "no experiment definitions on the stats topic")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "EXPERIMENT\tVARIANT\tWEIGHT\tKEYS\tSHARE\tEVENTS\tEVENT SHARE\tLIMIT\tSRM (keys)")
	for _, x := range xs {
		srm := fmt.Sprintf("p=%.3g chi2=%.2f", x.SRM.P, x.SRM.Chi2)
		switch {
		case !x.SRM.Checked:
			srm = fmt.Sprintf("not checked: %d keys, needs %d", x.Keys, splitter.SRMMinEvents)
		case x.SRM.Mismatch:
			srm += "  " + MismatchMark + fmt.Sprintf(" (p < %g: the counts do not follow the weights)", splitter.SRMAlpha)
		}
		for i, v := range x.Variants {
			share, eshare := pct(v.Share), pct(v.EventShare)
			lim := "-"
			if v.Limit != "" {
				lim = "over limit -> " + v.Fallback
			}
			name, s := "", ""
			if i == 0 {
				name, s = printableName(x.Layer+"/"+x.Experiment), srm
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t%d\t%s\t%d\t%s\t%s\t%s\n", name, printableName(v.Name), 100*v.Weight, v.Keys, share, v.Count, eshare, lim, s)
		}
	}
	return tw.Flush()
}

// num prints a count without a fraction, rewards with two decimals.
func num(x float64) string {
	s := fmt.Sprintf("%.2f", x)
	return strings.TrimSuffix(s, ".00")
}

func pct(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100**x)
}

// printableName returns a name as it is when every character prints, else
// quoted with escapes: a name on the stats topic may come from anyone,
// and must not reach a terminal as control sequences (or break a table
// with a tab).
func printableName(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
