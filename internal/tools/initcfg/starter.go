package initcfg

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/throttler/throttler/config"
)

// Target says where the starter config's worker runs.
type Target struct {
	Brokers  []string
	Registry string // the schema registry's URL, for Avro and Protobuf
}

// Window is the window of the starter budgets, from the sample's minute.
const Window = 24 * time.Hour

// WriteConfig writes the starter config of r: the brokers and topics, the
// proposed fields, the format and registry of framed records, and a window
// budget per frequent budget value, each line commented with what the
// sample showed. config.Parse accepts it; its targets are placeholders
// sized from the sample (about half of a window's events).
func WriteConfig(w io.Writer, r *Report, t Target) error {
	if r.Fields[RoleBudget].Path == "" || len(r.Budgets) == 0 {
		return fmt.Errorf("no field of topic %s can name the budget (%s): a worker needs one; fields seen: %s",
			r.Topic, r.Fields[RoleBudget].Reason, strings.Join(pathNames(r), ", "))
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# A starter config for topic %s, written by `throttler init` from %d %s\n", r.Topic, r.Sampled, plural(r.Sampled, "record"))
	p("# sampled at %s (%s). Check it with `throttler validate FILE`, run a\n", r.Now.UTC().Format(time.RFC3339), r.Format)
	p("# worker with `throttler run FILE`; docs/configuration.md has every field.\n\n")
	p("brokers: [%s]\n", strings.Join(mapStrings(t.Brokers, scalar), ", "))
	p("topics:\n")
	p("  input: [%s]\n", scalar(r.Topic))
	p("  output: %s  # the events that pass\n", scalar(r.Topic+".passed"))
	p("  rejected: %s  # the events over budget, with the reason in a header\n", scalar(r.Topic+".rejected"))
	if r.Format != "json" {
		p("format: {input: %s}\n", r.Format)
		p("schema_registry: {urls: [%s]}\n", scalar(t.Registry))
	}
	p("\n# The paths of the sample's events (%d of %d records read as events):\n#\n", r.Events, r.Sampled)
	writeTable(&b, r, "#   ")
	p("#\n# Where the worker reads each value; an empty path is left out.\nfields:\n")
	for _, role := range Roles {
		pr := r.Fields[role]
		if pr.Path == "" {
			p("  # %s: none: %s\n", role, pr.Reason)
			continue
		}
		p("  %s: %s  # %s\n", role, scalar(pr.Path), pr.Reason)
	}
	for _, n := range r.Notes {
		p("# Note: %s.\n", n)
	}
	p("\n# A budget per frequent value of %s: each spends its target over the\n", r.Fields[RoleBudget].Path)
	p("# window from begin to end, passing events at the pace that finishes on\n# time. The targets are placeholders: set your own.")
	if r.Fields[RoleScore].Path != "" {
		p(" With scored: true a\n# budget passes the highest scores (fields.score) first.")
	}
	p("\n# Events naming a budget the config lacks go to the dead-letter topic.\n")
	if r.Rarer > 0 {
		p("# %d rarer %s of the sample %s no budget here.\n", r.Rarer, plural(r.Rarer, "value"), map[bool]string{true: "has", false: "have"}[r.Rarer == 1])
	}
	begin := r.Now.UTC().Truncate(time.Minute)
	p("budgets:\n")
	for _, bud := range r.Budgets {
		target, why := budgetTarget(bud, r)
		p("  # %s\n", why)
		p("  - name: %s\n    target: %s\n    begin: %s\n    end: %s\n", scalar(bud.Name), strconv.FormatFloat(target, 'f', -1, 64),
			begin.Format(time.RFC3339), begin.Add(Window).Format(time.RFC3339))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// budgetTarget returns a budget's placeholder target and the comment that
// says where it comes from.
func budgetTarget(bud Budget, r *Report) (float64, string) {
	seen := fmt.Sprintf("%d of %d sampled events (%s)", bud.Count, r.Events, percent(bud.Count, r.Events))
	if bud.Rate == 0 {
		return float64(max(bud.Count, 1)) * 1000, seen + "; the sample's span is unknown"
	}
	t := roundSignificant(bud.Rate*Window.Seconds()/2, 2)
	return max(t, 1), fmt.Sprintf("%s, about %s events/s: the target is about half of a window of them", seen, num(bud.Rate))
}

// roundSignificant rounds x to d significant digits, exactly as written
// in decimal (3.4e+06, not 3399999.9999999995).
func roundSignificant(x float64, d int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', d, 64), 64)
	return r
}

// writeTable writes the paths as a table, each line after prefix.
func writeTable(b *strings.Builder, r *Report, prefix string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, prefix+"path\ttype\tpresent\tdistinct\trange or examples")
	for _, s := range r.Paths {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\n", prefix, s.Path, s.Kind(), percent(s.Present, r.Events), s.Distinct, describe(s))
	}
	tw.Flush()
}

// describe is a path's range or examples, on one line.
func describe(s *PathStats) string {
	switch {
	case s.Times() > 0 && s.Times() >= s.Present*9/10:
		return s.First.UTC().Format(time.RFC3339) + " to " + s.Last.UTC().Format(time.RFC3339)
	case s.Numbers > 0 && s.Numbers == s.Present:
		return num(s.Min) + " to " + num(s.Max)
	}
	ex := make([]string, len(s.Examples))
	for i, e := range s.Examples {
		if len(e) > 40 {
			e = e[:37] + "..."
		}
		ex[i] = strconv.Quote(e)
	}
	return strings.Join(ex, ", ")
}

// scalar writes s as a YAML scalar, quoted when YAML needs it.
func scalar(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(string(out), "\n")
}

func mapStrings(ss []string, f func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func pathNames(r *Report) []string {
	var out []string
	for _, s := range r.Paths {
		out = append(out, s.Path+" ("+s.Kind().String()+")")
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// validBudgetName reports whether the config accepts name as a budget's.
func validBudgetName(name string) bool {
	for _, p := range config.CheckBudget(config.Budget{Name: name, Target: 1, Period: time.Hour}) {
		if p.Path == "name" {
			return false
		}
	}
	return true
}

// WriteSummary writes what the sample showed and what is proposed, for a
// terminal: the format, the paths, the fields and the budgets.
func WriteSummary(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s sampled, %d read as %s events", r.Topic, r.Sampled, plural(r.Sampled, "record"), r.Events, r.Format)
	if r.Span > 0 {
		fmt.Fprintf(&b, " over %v", r.Span.Round(time.Millisecond))
	}
	b.WriteString("\n\n")
	writeTable(&b, r, "  ")
	b.WriteString("\nproposed fields:\n")
	for _, role := range Roles {
		pr := r.Fields[role]
		path := pr.Path
		if path == "" {
			path = "(none)"
		}
		fmt.Fprintf(&b, "  %-6s  %s: %s\n", role, path, pr.Reason)
	}
	if len(r.Budgets) > 0 {
		b.WriteString("budgets:")
		for _, bud := range r.Budgets {
			fmt.Fprintf(&b, " %s (%d)", strconv.Quote(bud.Name), bud.Count)
		}
		if r.Rarer > 0 {
			fmt.Fprintf(&b, ", and %d rarer %s without a budget", r.Rarer, plural(r.Rarer, "value"))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
