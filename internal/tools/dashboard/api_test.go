package dashboard

import (
	"bufio"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

var begin = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// smallCluster is a source with a budget on course, one behind, a parent
// with two children, a reward budget and a variant limit.
func smallCluster(now time.Time) *fakeSource {
	f := newFake()
	end := begin.Add(100 * time.Second)
	limit := splitter.LimitBudget("ui", "color", "red")
	for _, b := range []flow.Budget{
		{Name: "brand", Target: 2000, Begin: begin, End: end},
		{Name: "brand-a", Target: 1000, Begin: begin, End: end, Parent: "brand"},
		{Name: "brand-b", Target: 1000, Begin: begin, End: end, Parent: "brand"},
		{Name: "clicks", Target: 100, Begin: begin, End: end, Rewards: true},
		{Name: "spring", Target: 1000, Begin: begin, End: end},
		{Name: limit, Target: 50, Period: time.Hour},
	} {
		f.budget(b)
	}
	f.exps = []stats.ExperimentDef{{Layer: "ui", Experiment: "color", Variants: []stats.VariantDef{
		{Name: "red", Weight: 1, Topic: "red", Limit: limit, Fallback: "output"}, {Name: "blue", Weight: 1, Topic: "blue"}}}}
	f.progressSmall(now)
	return f
}

// progressSmall sets the counters at now: spring 10% behind, the rest on
// their ideal course.
func (f *fakeSource) progressSmall(now time.Time) {
	frac := min(1, max(0, now.Sub(begin).Seconds()/100))
	f.report("brand", "e/0", now, 4000, uint64(2000*frac), 0)
	f.report("brand-a", "e/0", now, 2000, uint64(1000*frac), 0)
	f.report("brand-b", "e/1", now, 2000, uint64(1000*frac), 0)
	f.report("clicks", "e/0", now, 500, 400, 100*frac)
	f.report("spring", "e/0", now, 2000, uint64(1000*max(0, frac-0.1)), 0)
}

func newSmall(t *testing.T) (*Server, *fakeSource, string, *time.Time) {
	t.Helper()
	now := begin.Add(-time.Second)
	src := smallCluster(now)
	s := New(src, Topic("t.stats"), Clock(func() time.Time { return now }))
	for _, at := range []time.Duration{10, 20, 30, 40, 50} {
		now = begin.Add(at * time.Second)
		src.progressSmall(now)
		s.Sample(now)
	}
	return s, src, serve(t, s), &now
}

func names(bs []Budget) string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return strings.Join(out, ",")
}

func TestListBudgets(t *testing.T) {
	_, _, u, _ := newSmall(t)
	list := func(q string) BudgetList { return getJSON[BudgetList](t, u+"/api/v1/budgets?"+q) }
	l := list("")
	if got := names(l.Budgets); got != "brand,brand-a,brand-b,clicks,spring,variant:ui/color/red" || l.Total != 6 || l.All != 6 || l.Sort != "tree" {
		t.Fatalf("tree order %s, %+v", got, l)
	}
	if b := l.Budgets[1]; b.Depth != 1 || b.Parent != "brand" || l.Budgets[0].Children != 2 || b.State != StateOnCourse {
		t.Errorf("brand-a %+v", b)
	}
	sp := l.Budgets[4]
	if sp.State != StateBehind || sp.Deviation > -0.09 || len(sp.Trend) != 6 || sp.Trend[5] != sp.Deviation || sp.Trend[0] != 0 {
		t.Errorf("spring %+v", sp)
	}
	if v := l.Budgets[5]; v.Variant != "ui/color/red" || v.State != StateNoReports {
		t.Errorf("variant limit %+v", v)
	}
	if l := list("sort=deviation&limit=3"); names(l.Budgets) != "spring,variant:ui/color/red,brand" || l.Total != 6 || l.Limit != 3 {
		t.Errorf("by deviation: %s %+v", names(l.Budgets), l)
	}
	if l := list("sort=name&offset=4&limit=10"); names(l.Budgets) != "spring,variant:ui/color/red" || l.Offset != 4 {
		t.Errorf("page 2 by name: %s", names(l.Budgets))
	}
	if l := list("q=BRAND-&sort=name"); names(l.Budgets) != "brand-a,brand-b" || l.Total != 2 {
		t.Errorf("search: %s", names(l.Budgets))
	}
	if l := list("state=off"); names(l.Budgets) != "spring" {
		t.Errorf("off course: %s", names(l.Budgets))
	}
	if l := list("state=no+reports,behind&sort=name"); names(l.Budgets) != "spring,variant:ui/color/red" {
		t.Errorf("two states: %s", names(l.Budgets))
	}
	if l := list("parent=brand"); names(l.Budgets) != "brand-a,brand-b" {
		t.Errorf("children: %s", names(l.Budgets))
	}
	if l := list("limit=5000"); l.Limit != MaxLimit {
		t.Errorf("limit %d", l.Limit)
	}
	for _, bad := range []string{"sort=size", "state=late", "offset=-1", "limit=x"} {
		var e map[string]string
		if code := getInto(t, u+"/api/v1/budgets?"+bad, &e); code != http.StatusBadRequest || e["error"] == "" {
			t.Errorf("%s: %d %v", bad, code, e)
		}
	}
}

func TestBudgetDetail(t *testing.T) {
	_, _, u, now := newSmall(t)
	d := getJSON[BudgetDetail](t, u+"/api/v1/budgets/brand")
	if d.Budget.Name != "brand" || names(d.Children) != "brand-a,brand-b" || !d.At.Equal(*now) || d.Seq != 6 || len(d.Children[0].Trend) != 6 {
		t.Fatalf("detail %+v", d)
	}
	// Six samples: before the window (0), then 400 passes every 10 s.
	if len(d.Curve) != 6 || d.Curve[0].Achieved != 0 || d.Curve[5].Achieved != 1000 || d.Curve[5].Ideal != 1000 || d.Curve[5].Deviation != 0 {
		t.Errorf("curve %+v", d.Curve)
	}
	if len(d.Ideal) != 2 || !d.Ideal[0].T.Equal(begin) || d.Ideal[1].Ideal != 2000 || !d.Ideal[1].T.Equal(begin.Add(100*time.Second)) {
		t.Errorf("ideal %+v", d.Ideal)
	}
	// A reward budget's curve carries its passes.
	c := getJSON[BudgetDetail](t, u+"/api/v1/budgets/clicks")
	if n := len(c.Curve); c.Budget.Kind != "rewards" || c.Curve[n-1].Passes != 400 || c.Curve[n-1].Achieved != 50 {
		t.Errorf("clicks %+v", c.Curve)
	}
	// A name with a slash, escaped in the path.
	v := getJSON[BudgetDetail](t, u+"/api/v1/budgets/"+url.PathEscape("variant:ui/color/red"))
	if v.Budget.PeriodSeconds != 3600 || len(v.Ideal) != 2 {
		t.Errorf("variant limit %+v", v)
	}
	var e map[string]string
	if code := getInto(t, u+"/api/v1/budgets/nope", &e); code != http.StatusNotFound || !strings.Contains(e["error"], "nope") {
		t.Errorf("unknown budget: %d %v", code, e)
	}
	if code := getInto(t, u+"/api/v1/nothing", &e); code != http.StatusNotFound {
		t.Errorf("unknown path: %d", code)
	}
}

// TestChart: the chart is well-formed SVG with the band, the ideal
// course and the achieved curve through every sample; a reward budget
// has a third panel.
func TestChart(t *testing.T) {
	_, _, u, _ := newSmall(t)
	for name, want := range map[string][]string{
		"spring": {`class="band"`, `class="ideal"`, `<g class="off"><polyline class="achieved"`, `class="dev-line off"`, "Deviation from the ideal course"},
		"clicks": {`class="reward"`, "Rewards per pass", `<g><polyline class="achieved"`},
	} {
		resp, err := http.Get(u + "/api/v1/budgets/" + name + "/chart.svg")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "image/svg+xml" {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, ct)
		}
		svg := string(body)
		for _, w := range want {
			if !strings.Contains(svg, w) {
				t.Errorf("%s: chart lacks %q", name, w)
			}
		}
		dec := xml.NewDecoder(strings.NewReader(svg))
		var points string
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
				for _, a := range se.Attr {
					if a.Name.Local == "class" && a.Value == "achieved" {
						points = se.Attr[1].Value
					}
				}
			}
		}
		if n := len(strings.Fields(points)); n != 6 {
			t.Errorf("%s: achieved line through %d points, want 6: %q", name, n, points)
		}
	}
}

func TestSummaryExperimentsWorkers(t *testing.T) {
	s, src, u, now := newSmall(t)
	src.mu.Lock()
	src.counts["ui/color"] = []stats.VariantCounts{{Layer: "ui", Experiment: "color", Source: "e/0", At: *now,
		Counts: []stats.VariantCount{{Variant: "red", Count: 900, Keys: 600}, {Variant: "blue", Count: 700, Keys: 400}}}}
	src.workers = []stats.WorkerStatus{
		{Worker: "old", At: now.Add(-time.Minute), SyncInterval: time.Second, Aborted: 2, Sources: []stats.SourceStatus{{Source: "e/0", Lag: 500}, {Source: "e/2", Lag: 7}}},
		{Worker: "gone", At: now.Add(-time.Hour), SyncInterval: time.Second, Aborted: 5, Sources: []stats.SourceStatus{{Source: "e/9", Lag: 9}}},
		{Worker: "w1", At: *now, SyncInterval: time.Second, Commits: 10, DeadLetters: 3, Omitted: 1,
			Sources: []stats.SourceStatus{{Source: "e/0", Lag: 4, Offset: 40, Committed: now.Add(-2 * time.Second)}, {Source: "e/1", Lag: -1, Offset: -1}}},
	}
	src.mu.Unlock()
	s.Sample(*now)

	sm := getJSON[Summary](t, u+"/api/v1/summary")
	if sm.Version != 1 || sm.StatsTopic != "t.stats" || sm.Seq != 7 || sm.Budgets.Total != 6 || sm.Budgets.OffCourse != 1 || sm.Budgets.Behind != 1 ||
		sm.Budgets.NoReports != 1 || sm.Experiments.Mismatches != 1 || sm.Workers.Total != 2 || sm.Workers.Gone != 1 || sm.Workers.Silent != 1 ||
		sm.Workers.Lag != 4 || sm.Workers.Aborted != 2 || sm.Workers.DeadLetters != 3 || sm.Workers.Partitions != 3 || sm.CurvePoints == 0 {
		t.Errorf("summary %+v", sm)
	}
	x := getJSON[ExperimentList](t, u+"/api/v1/experiments")
	if len(x.Experiments) != 1 || !x.Experiments[0].SRM.Mismatch || x.Mismatches != 1 || *x.Experiments[0].Variants[0].Share != 0.6 {
		t.Errorf("experiments %+v", x)
	}
	w := getJSON[WorkerList](t, u+"/api/v1/workers")
	if len(w.Workers) != 2 || !w.Workers[0].Silent || w.Workers[1].Silent || w.Workers[1].Partitions != 3 || w.Workers[1].Lag != 4 {
		t.Fatalf("workers %+v", w.Workers)
	}
	p := w.Partitions
	if len(p) != 3 || p[0].Source != "e/0" || p[0].Owner != "w1" || p[0].Claims != 2 || p[0].Lag != 4 || *p[0].LastCommitAge != 2 ||
		p[1].LastCommitAge != nil || p[2].Owner != "old" || !p[2].OwnerSilent {
		t.Errorf("partitions %+v", p)
	}
}

// TestEvents: the event stream sends the newest sample at once, then one
// event per sample, and ends on Close.
func TestEvents(t *testing.T) {
	s, _, u, now := newSmall(t)
	resp, err := http.Get(u + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	data := func() string {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				return strings.TrimSpace(d)
			}
		}
	}
	if d := data(); !strings.HasPrefix(d, `{"seq":6,`) {
		t.Errorf("first event %s", d)
	}
	s.Sample(now.Add(time.Second))
	if d := data(); d != `{"seq":7,"at":"2026-11-22T10:00:51Z"}` {
		t.Errorf("second event %s", d)
	}
	s.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Errorf("stream did not end cleanly: %v", err)
	}
}

// TestPagesOffline: the page and its assets are served from the binary
// and name nothing from elsewhere.
func TestPagesOffline(t *testing.T) {
	_, _, u, _ := newSmall(t)
	for _, path := range []string{"/", "/budgets/spring", "/experiments", "/workers", "/assets/app.js", "/assets/app.css"} {
		resp, err := http.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) < 500 {
			t.Errorf("%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		for _, ext := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(body), ext) {
				t.Errorf("%s refers to %q: the dashboard must work offline", path, ext)
			}
		}
	}
}

// TestDeviationAsOfCounts: counts reported a second before the sample are
// compared with the ideal course a second before, and drawn there.
func TestDeviationAsOfCounts(t *testing.T) {
	src := newFake()
	src.budget(flow.Budget{Name: "w", Target: 1000, Begin: begin, End: begin.Add(100 * time.Second)})
	src.report("w", "e/0", begin.Add(50*time.Second), 1000, 500, 0)
	now := begin.Add(51 * time.Second)
	s := New(src, Clock(func() time.Time { return now }))
	u := serve(t, s)
	d := getJSON[BudgetDetail](t, u+"/api/v1/budgets/w")
	b := d.Budget
	if b.Ideal != 500 || b.Deviation != 0 || b.State != StateOnCourse || !b.CountsAt.Equal(begin.Add(50*time.Second)) {
		t.Errorf("budget %+v", b)
	}
	if len(d.Curve) != 1 || !d.Curve[0].T.Equal(begin.Add(50*time.Second)) || d.Curve[0].Deviation != 0 {
		t.Errorf("curve %+v", d.Curve)
	}
}
