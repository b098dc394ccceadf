package clusterstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// catalog is a fakeSource that also lists names (in reverse, to show
// that the walk does not rely on an order) and finds one definition,
// counting the calls of BudgetNames.
type catalog struct {
	fakeSource
	walks *int
}

func (c catalog) BudgetNames() []string {
	*c.walks++
	out := make([]string, 0, len(c.defs))
	for i := len(c.defs) - 1; i >= 0; i-- {
		out = append(out, c.defs[i].Budget.Name)
	}
	return out
}
func (c catalog) BudgetDef(name string) (stats.BudgetDef, bool) {
	for _, d := range c.defs {
		if d.Budget.Name == name {
			return d, true
		}
	}
	return stats.BudgetDef{}, false
}

// queryCatalog has window budgets "camp/i" half-way through their window
// at at, each of which passed i*10 of a target of 1000 (deviation
// (10i-500)/1000), and "acct/x", on track.
func queryCatalog(at time.Time) catalog {
	begin := at.Add(-30 * time.Minute)
	src := catalog{fakeSource: fakeSource{reports: map[string][]flow.Report{}}, walks: new(int)}
	add := func(name string, passed uint64) {
		src.defs = append(src.defs, stats.BudgetDef{Budget: flow.Budget{Name: name, Target: 1000, Begin: begin, End: begin.Add(time.Hour)}})
		src.reports[name] = []flow.Report{{Source: "e/0", At: at, InPeriod: flow.Counters{Offered: 2 * passed, Passed: passed}}}
	}
	add("acct/x", 500)
	for i := range 100 {
		add(fmt.Sprintf("camp/%02d", i), uint64(10*i))
	}
	return src
}

func names(q Query, src catalog, at time.Time) (string, int) {
	var got []string
	matched, err := EachBudget(src, at, q, nil, func(b Budget) error { got = append(got, b.Name); return nil })
	if err != nil {
		return "error: " + err.Error(), matched
	}
	return strings.Join(got, ","), matched
}

func TestEachBudget(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	src := queryCatalog(at)
	for _, c := range []struct {
		q       Query
		want    string
		matched int
		walks   int // BudgetNames calls: 0 for exact names
	}{
		{Query{Budgets: []string{"camp/07", "acct/x", "nobody"}}, "acct/x,camp/07", 2, 0},
		{Query{Budgets: []string{"camp/0?"}}, "camp/00,camp/01,camp/02,camp/03,camp/04,camp/05,camp/06,camp/07,camp/08,camp/09", 10, 1},
		{Query{Budgets: []string{"*/x", "camp/[1-2][!1-9]"}}, "acct/x,camp/10,camp/20", 3, 1},
		{Query{Budgets: []string{"c*9"}}, "camp/09,camp/19,camp/29,camp/39,camp/49,camp/59,camp/69,camp/79,camp/89,camp/99", 10, 1},
		// |deviation|: camp/00 -50%, camp/99 +49%, camp/01 -49%, ...;
		// ties by name.
		{Query{Top: 4}, "camp/00,camp/01,camp/99,camp/02", 101, 1},
		{Query{Budgets: []string{"camp/4?", "camp/5?"}, Top: 3}, "camp/40,camp/41,camp/59", 20, 1},
		{Query{Budgets: []string{"acct.x"}}, "", 0, 0}, // '.' is no wildcard
	} {
		*src.walks = 0
		got, matched := names(c.q, src, at)
		if got != c.want || matched != c.matched || *src.walks != c.walks {
			t.Errorf("%+v: got %s (%d matched, %d walks), want %s (%d, %d)", c.q, got, matched, *src.walks, c.want, c.matched, c.walks)
		}
	}
	for _, bad := range []Query{{Top: -1}, {Budgets: []string{""}}, {Budgets: []string{"[z-a]*"}}} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestStream checks that the streamed JSON is Build's document (plus the
// query's fields) and that the text holds the rows and the selection.
func TestStream(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	src := queryCatalog(at)
	var buf bytes.Buffer
	if err := Stream(&buf, src, "t", at, Query{}, true); err != nil {
		t.Fatal(err)
	}
	var got, want Status
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, buf.Bytes())
	}
	b, _ := json.Marshal(Build(src, "t", at))
	json.Unmarshal(b, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed\n%+v\nwant\n%+v", got, want)
	}
	buf.Reset()
	q := Query{Budgets: []string{"camp/*"}, Top: 2}
	if err := Stream(&buf, src, "t", at, q, true); err != nil {
		t.Fatal(err)
	}
	got = Status{}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Budgets) != 2 || got.Budgets[0].Name != "camp/00" || got.BudgetsMatched != 100 || !reflect.DeepEqual(got.Query, &q) {
		t.Fatalf("top 2 of camp/*: %+v", got)
	}
	buf.Reset()
	if err := Stream(&buf, src, "t", at, q, false); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if strings.Count(text, "\ncamp/") != 2 || !strings.Contains(text, "2 of 100 budgets matching camp/*, the 2 of largest |deviation|") {
		t.Fatalf("text:\n%s", text)
	}
}
