package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteSVG draws, for each budget, the achieved amount against the ideal
// curve over time, in percent of the target, one panel per budget.
func (r *Result) WriteSVG(w io.Writer) error {
	var names []string
	rows := map[string][]Row{}
	for _, row := range r.Timeline {
		if _, ok := rows[row.Budget]; !ok {
			names = append(names, row.Budget)
		}
		rows[row.Budget] = append(rows[row.Budget], row)
	}
	targets := map[string]BudgetResult{}
	for _, b := range r.Budgets {
		targets[b.Name] = b
	}
	const (
		pw, ph = 640, 220 // panel plot area
		ml, mr = 64, 24
		mt, mb = 44, 40
	)
	width := ml + pw + mr
	height := len(names) * (mt + ph + mb)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	for i, name := range names {
		rs := rows[name]
		br := targets[name]
		top := i*(mt+ph+mb) + mt
		tmax := rs[len(rs)-1].T
		ymax := 100.0
		for _, row := range rs {
			ymax = math.Max(ymax, 100*achievedOf(br, row)/br.Target)
		}
		ymax = math.Ceil(ymax/20) * 20
		x := func(t float64) float64 { return float64(ml) + t/tmax*pw }
		y := func(pct float64) float64 { return float64(top) + ph - pct/ymax*ph }

		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", ml, top-22, html.EscapeString(name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">target %.0f %s · achieved %.0f (%+.2f%%) · max deviation %.2f%%</text>`+"\n",
			ml, top-7, br.Target, br.Kind, br.Achieved, 100*br.FinalError, 100*br.MaxDeviation)
		// grid and axes
		for pct := 0.0; pct <= ymax; pct += 20 {
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", ml, ml+pw, y(pct), y(pct))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.0f%%</text>`+"\n", ml-6, y(pct)+4, pct)
		}
		step := niceStep(tmax / 6)
		for t := 0.0; t <= tmax+1e-9; t += step {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", x(t), top+ph+16, fmtSeconds(t))
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", ml, top, pw, ph)
		// ideal (dashed) and achieved (solid)
		var ideal, ach strings.Builder
		for j, row := range rs {
			sep := " "
			if j == 0 {
				sep = ""
			}
			fmt.Fprintf(&ideal, "%s%.1f,%.1f", sep, x(row.T), y(100*row.Ideal/br.Target))
			fmt.Fprintf(&ach, "%s%.1f,%.1f", sep, x(row.T), y(100*achievedOf(br, row)/br.Target))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#999" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", ideal.String())
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2"/>`+"\n", ach.String())
		lx := ml + pw - 170
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#1f77b4" stroke-width="2"/><text x="%d" y="%d">achieved</text>`+"\n", lx, lx+24, top+16, top+16, lx+30, top+20)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#999" stroke-width="2" stroke-dasharray="6 4"/><text x="%d" y="%d">ideal</text>`+"\n", lx+95, lx+119, top+16, top+16, lx+125, top+20)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func achievedOf(b BudgetResult, row Row) float64 {
	if b.Kind == "rewards" {
		return float64(row.Rewarded)
	}
	return float64(row.Passed)
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtSeconds(t float64) string {
	switch {
	case t >= 3600 && math.Mod(t, 60) == 0:
		return fmt.Sprintf("%.0fm", t/60)
	case t >= 120:
		return fmt.Sprintf("%.0fs", t)
	}
	return fmt.Sprintf("%.4gs", t)
}
