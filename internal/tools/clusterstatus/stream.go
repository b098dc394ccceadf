package clusterstatus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/throttler/throttler/stats"
)

// StreamSource is what Stream reads: a stats.View satisfies it.
type StreamSource interface {
	Source
	BudgetNames() []string
	BudgetDef(name string) (stats.BudgetDef, bool)
}

// Stream writes the status at now of the budgets q selects (EachBudget)
// and of every experiment to w: two tables, budgets then experiments,
// followed, when q selects, by a line saying how many budgets matched; or, with asJSON,
// the JSON document of Status (BudgetsMatched and Query set), indented as
// `throttler status --json` prints it. It writes one budget at a time and
// holds only the q.Top best when q.Top is set: a status of 100,000
// budgets is never held whole.
func Stream(w io.Writer, src StreamSource, topic string, now time.Time, q Query, asJSON bool) error {
	if _, err := q.compile(); err != nil {
		return err
	}
	st, limitOf := head(src, topic, now)
	if len(q.Budgets) > 0 || q.Top > 0 {
		st.Query = &q
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	if asJSON {
		err = streamJSON(bw, src, st, now, limitOf)
	} else {
		err = streamText(bw, src, st, now, limitOf)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func streamText(w io.Writer, src StreamSource, st Status, now time.Time, limitOf map[string]string) error {
	writeTextHead(w, st)
	t := newBudgetTable(w)
	q := Query{}
	if st.Query != nil {
		q = *st.Query
	}
	matched, err := EachBudget(src, now, q, limitOf, t.row)
	if err != nil {
		return err
	}
	if st.Query != nil {
		fmt.Fprintln(t.tw, selection(t.rows, matched, q))
	}
	if err := t.end(); err != nil {
		return err
	}
	return writeExperiments(w, st.Experiments)
}

// selection says which budgets a query showed.
func selection(shown, matched int, q Query) string {
	s := fmt.Sprintf("%d of %d budgets", shown, matched)
	if len(q.Budgets) > 0 {
		s += " matching " + strings.Join(q.Budgets, ", ")
	}
	if q.Top > 0 {
		s += fmt.Sprintf(", the %d of largest |deviation|", q.Top)
	}
	return s
}

// streamJSON writes the document of st with its budgets streamed in
// place, the fields in Status's order.
func streamJSON(w io.Writer, src StreamSource, st Status, now time.Time, limitOf map[string]string) error {
	field := func(name string, v any, last bool) error {
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n"
		if last {
			sep = "\n"
		}
		_, err = fmt.Fprintf(w, "  %q: %s%s", name, b, sep)
		return err
	}
	fmt.Fprint(w, "{\n")
	for _, f := range []struct {
		name string
		v    any
	}{{"version", st.Version}, {"stats_topic", st.StatsTopic}, {"at", st.At}} {
		if err := field(f.name, f.v, false); err != nil {
			return err
		}
	}
	fmt.Fprint(w, "  \"budgets\": [")
	n := 0
	q := Query{}
	if st.Query != nil {
		q = *st.Query
	}
	matched, err := EachBudget(src, now, q, limitOf, func(b Budget) error {
		js, err := json.MarshalIndent(b, "    ", "  ")
		if err != nil {
			return err
		}
		sep := ","
		if n == 0 {
			sep = ""
		}
		n++
		_, err = fmt.Fprintf(w, "%s\n    %s", sep, js)
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprint(w, "\n  ")
	}
	fmt.Fprint(w, "],\n")
	if err := field("experiments", st.Experiments, false); err != nil {
		return err
	}
	if err := field("srm_mismatches", st.Mismatches, false); err != nil {
		return err
	}
	if err := field("parked", st.Parked, false); err != nil {
		return err
	}
	if err := field("budgets_matched", matched, st.Query == nil); err != nil {
		return err
	}
	if st.Query != nil {
		if err := field("query", st.Query, true); err != nil {
			return err
		}
	}
	_, err = fmt.Fprint(w, "}\n")
	return err
}
