package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// The budget chart is SVG drawn here, on the server: the page embeds it
// as it is, a script can fetch it (GET /api/v1/budgets/{name}/chart.svg),
// and no chart library has to be shipped or kept up to date. Panels, over
// the whole window or period:
//
//	course     achieved against the ideal course, with the ±Band band
//	deviation  (achieved-ideal)/target over time, with the band
//	rewards    rewards per pass over time (reward budgets only)

const (
	chartW    = 1200
	padL      = 64
	padR      = 24
	mainH     = 230
	devH      = 140
	rewardH   = 110
	panelGap  = 34
	topPad    = 26
	bottomPad = 30
)

// panel maps a time and a value range onto a rectangle.
type panel struct {
	x0, y0, w, h float64
	t0, t1       time.Time
	v0, v1       float64
}

func (p panel) x(t time.Time) float64 {
	span := float64(p.t1.Sub(p.t0))
	if span <= 0 {
		return p.x0
	}
	f := float64(t.Sub(p.t0)) / span
	return p.x0 + p.w*math.Min(1, math.Max(0, f))
}

func (p panel) y(v float64) float64 {
	f := (v - p.v0) / (p.v1 - p.v0)
	if p.v1 == p.v0 || math.IsNaN(f) {
		return p.y0 + p.h
	}
	return p.y0 + p.h*(1-math.Min(1.02, math.Max(-0.02, f)))
}

// maxAxis bounds the values a chart's axes span: figures past it (which
// no budget within flow's limits reaches) are drawn at its edge.
const maxAxis = 1e300

// axis returns v within ±maxAxis, NaN as 0.
func axis(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return math.Max(-maxAxis, math.Min(maxAxis, v))
}

// maxGridLines bounds the grid lines of a panel (four or five are drawn).
const maxGridLines = 12

// writeChart draws a budget's chart; it stops, with ctx's error, when ctx
// ends (the client left). Its work follows the curve's points, whatever
// the figures: every loop is bounded by the data's size.
func writeChart(ctx context.Context, out io.Writer, d *BudgetDetail) error {
	w := bufio.NewWriter(out)
	b := &d.Budget
	rewards := b.Kind == "rewards"
	height := topPad + mainH + panelGap + devH + bottomPad
	if rewards {
		height += panelGap + rewardH
	}
	t0, t1 := b.Start, b.Finish
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" class="chart" data-budget="%s">`,
		chartW, height, html.EscapeString(b.Name))
	fmt.Fprintf(w, `<title>%s: achieved against the ideal course</title>`, html.EscapeString(b.Name))
	w.WriteString(chartStyle)

	top := float64(topPad)
	vmax := axis(b.Target)
	for _, c := range d.Curve {
		vmax = math.Max(vmax, axis(c.Achieved))
	}
	main := panel{x0: padL, y0: top, w: chartW - padL - padR, h: mainH, t0: t0, t1: t1, v0: 0, v1: vmax * 1.08}
	mainPanel(ctx, w, main, d)

	top += mainH + panelGap
	dmax := 2 * Band
	for _, c := range d.Curve {
		dmax = math.Max(dmax, math.Abs(axis(c.Deviation))*1.15)
	}
	dev := panel{x0: padL, y0: top, w: main.w, h: devH, t0: t0, t1: t1, v0: -dmax, v1: dmax}
	devPanel(ctx, w, dev, d)

	if rewards {
		top += devH + panelGap
		rmax := 0.0
		for _, c := range d.Curve {
			if c.Passes > 0 {
				rmax = math.Max(rmax, axis(c.Achieved/c.Passes))
			}
		}
		rp := panel{x0: padL, y0: top, w: main.w, h: rewardH, t0: t0, t1: t1, v0: 0, v1: math.Max(rmax*1.15, 0.01)}
		rewardPanel(ctx, w, rp, d)
	}
	timeAxis(w, dev, float64(height-bottomPad+18))
	w.WriteString(`</svg>`)
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.Flush()
}

const chartStyle = `<style>
.chart{font:12px system-ui,-apple-system,"Segoe UI",sans-serif;fill:#334155}
.chart .grid{stroke:#e2e8f0;stroke-width:1}
.chart .axis{fill:#64748b;font-size:11px}
.chart .head{fill:#0f172a;font-weight:600;font-size:12.5px}
.chart .band{fill:#16a34a;fill-opacity:.13}
.chart .ideal{stroke:#64748b;stroke-width:1.5;stroke-dasharray:6 4;fill:none}
.chart .achieved{stroke:#2563eb;stroke-width:2.5;fill:none;stroke-linejoin:round}
.chart .off .achieved,.chart .dev-line.off{stroke:#dc2626}
.chart .dev-line{stroke:#2563eb;stroke-width:2;fill:none;stroke-linejoin:round}
.chart .zero{stroke:#94a3b8;stroke-width:1}
.chart .now{stroke:#0f172a;stroke-width:1;stroke-dasharray:2 3}
.chart .reward{stroke:#9333ea;stroke-width:2;fill:none}
.chart .dot{fill:#2563eb}
.chart .off .dot{fill:#dc2626}
</style>`

// mainPanel draws achieved against the ideal course and its band.
func mainPanel(ctx context.Context, w *bufio.Writer, p panel, d *BudgetDetail) {
	b := &d.Budget
	grid(w, p, func(v float64) string { return count(v) })
	fmt.Fprintf(w, `<text class="head" x="%d" y="%.1f">%s against the ideal course, ±%g%% of the target</text>`,
		padL, p.y0-9, strings.ToUpper(b.Kind[:1])+b.Kind[1:], Band*100)
	// The band: ideal ± Band × target along the ideal's corners.
	var up, down []string
	for _, ip := range d.Ideal {
		up = append(up, fmt.Sprintf("%.1f,%.1f", p.x(ip.T), p.y(ip.Ideal+Band*b.Target)))
		down = append([]string{fmt.Sprintf("%.1f,%.1f", p.x(ip.T), p.y(math.Max(0, ip.Ideal-Band*b.Target)))}, down...)
	}
	fmt.Fprintf(w, `<polygon class="band" points="%s"/>`, strings.Join(append(up, down...), " "))
	var ideal []string
	for _, ip := range d.Ideal {
		ideal = append(ideal, fmt.Sprintf("%.1f,%.1f", p.x(ip.T), p.y(ip.Ideal)))
	}
	fmt.Fprintf(w, `<polyline class="ideal" points="%s"/>`, strings.Join(ideal, " "))
	cls := ""
	if b.OffCourse() {
		cls = ` class="off"`
	}
	fmt.Fprintf(w, `<g%s>`, cls)
	line(ctx, w, "achieved", p, d.Curve, func(c CurvePoint) float64 { return c.Achieved })
	if n := len(d.Curve); n > 0 {
		last := d.Curve[n-1]
		fmt.Fprintf(w, `<circle class="dot" cx="%.1f" cy="%.1f" r="4"><title>%s achieved at %s</title></circle>`,
			p.x(last.T), p.y(last.Achieved), count(last.Achieved), last.T.UTC().Format(time.TimeOnly))
	}
	w.WriteString(`</g>`)
	nowLine(w, p, d.At)
	fmt.Fprintf(w, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">target %s</text>`, p.x0+p.w, p.y(b.Target)-5, count(b.Target))
}

// devPanel draws the deviation over time.
func devPanel(ctx context.Context, w *bufio.Writer, p panel, d *BudgetDetail) {
	grid(w, p, func(v float64) string { return fmt.Sprintf("%+.1f%%", 100*v) })
	fmt.Fprintf(w, `<text class="head" x="%d" y="%.1f">Deviation from the ideal course, in parts of the target</text>`, padL, p.y0-9)
	fmt.Fprintf(w, `<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, p.x0, p.y(Band), p.w, p.y(-Band)-p.y(Band))
	fmt.Fprintf(w, `<line class="zero" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, p.x0, p.x0+p.w, p.y(0), p.y(0))
	cls := "dev-line"
	if d.Budget.OffCourse() {
		cls += " off"
	}
	line(ctx, w, cls, p, d.Curve, func(c CurvePoint) float64 { return c.Deviation })
	nowLine(w, p, d.At)
}

// rewardPanel draws rewards per pass over time.
func rewardPanel(ctx context.Context, w *bufio.Writer, p panel, d *BudgetDetail) {
	grid(w, p, func(v float64) string { return fmt.Sprintf("%.3g", v) })
	fmt.Fprintf(w, `<text class="head" x="%d" y="%.1f">Rewards per pass</text>`, padL, p.y0-9)
	var pts []CurvePoint
	for _, c := range d.Curve {
		if c.Passes > 0 {
			pts = append(pts, c)
		}
	}
	line(ctx, w, "reward", p, pts, func(c CurvePoint) float64 { return c.Achieved / c.Passes })
	nowLine(w, p, d.At)
}

// line draws a polyline of pts; it stops early when ctx ends.
func line(ctx context.Context, w *bufio.Writer, cls string, p panel, pts []CurvePoint, v func(CurvePoint) float64) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(w, `<polyline class="%s" points="`, cls)
	for i, c := range pts {
		if i%512 == 511 && ctx.Err() != nil {
			break
		}
		if i > 0 {
			w.WriteByte(' ')
		}
		fmt.Fprintf(w, "%.1f,%.1f", p.x(c.T), p.y(v(c)))
	}
	w.WriteString(`"/>`)
}

func nowLine(w *bufio.Writer, p panel, now time.Time) {
	if now.Before(p.t0) || now.After(p.t1) {
		return
	}
	x := p.x(now)
	fmt.Fprintf(w, `<line class="now" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x, x, p.y0, p.y0+p.h)
}

// grid draws the value grid lines and labels of a panel.
func grid(w *bufio.Writer, p panel, label func(float64) string) {
	step := niceStep((p.v1 - p.v0) / 4)
	v := math.Ceil(p.v0/step) * step
	for i := 0; i < maxGridLines && v <= p.v1+step/1e6; i, v = i+1, v+step {
		y := p.y(v)
		fmt.Fprintf(w, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, p.x0, p.x0+p.w, y, y)
		fmt.Fprintf(w, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, p.x0-8, y+4, label(v))
	}
}

// timeAxis labels the time axis under the last panel.
func timeAxis(w *bufio.Writer, p panel, y float64) {
	span := p.t1.Sub(p.t0)
	layout := time.TimeOnly
	switch {
	case span > 48*time.Hour:
		layout = "Jan 2 15:04"
	case span > 2*time.Hour:
		layout = "15:04"
	}
	for i := range 7 {
		t := p.t0.Add(span * time.Duration(i) / 6)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 6:
			anchor = "end"
		}
		fmt.Fprintf(w, `<text class="axis" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, p.x(t), y, anchor, t.UTC().Format(layout))
	}
	fmt.Fprintf(w, `<text class="axis" x="%d" y="%.1f">UTC</text>`, 8, y)
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= raw {
			return m * e
		}
	}
	return 10 * e
}

// count formats a count compactly: 1234 → 1,234; 2.5e6 → 2.5M.
func count(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
