package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// TestScale100k measures the dashboard over a stats topic holding 100,000
// budgets (each reported by two sources): the page's first paint and the
// time to its first rows in headless Chromium, and the API's list call for
// a page of 100. It logs the figures and asserts nothing about speed (the
// machine is shared); it checks that the page and the API show the
// budgets. Opt in with THROTTLER_DASHBOARD_SCALE=1 (it takes seconds,
// and a few hundred MB).
func TestScale100k(t *testing.T) {
	if os.Getenv("THROTTLER_DASHBOARD_SCALE") == "" {
		t.Skip("set THROTTLER_DASHBOARD_SCALE=1 to measure the dashboard at 100,000 budgets")
	}
	const n = 100_000
	browser := newBrowser(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := stats.EnsureTopics(ctx, kadm.NewClient(cl), stats.StatsTopic("scale.stats", 12)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	publish100k(t, ctx, cl, n, now)

	t0 := time.Now()
	view, err := stats.NewView(ctx, "scale.stats", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(view.Close)
	if err := view.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	caughtUp := time.Since(t0)
	t0 = time.Now()
	srv := New(view, Topic("scale.stats"))
	firstSample := time.Since(t0)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	url := serveOn(t, srv)
	timeLists(t, url, n)

	// The page: first paint and first rows, from the navigation's start.
	if err := chromedp.Do(browser, chromedp.Navigate(url+"/?sort=deviation")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, browser, "100 rows", `document.querySelectorAll("#budget-rows tr[data-budget]").length == 100`)
	fcp := eval[float64](t, browser, `performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? -1`)
	fp := eval[float64](t, browser, `performance.getEntriesByName("first-paint")[0]?.startTime ?? -1`)
	rows := eval[float64](t, browser, `+document.body.dataset.firstRows`)
	t.Logf("%d budgets: view caught up in %v, first sample %v, heap %.0f MB after GC", n, caughtUp.Round(time.Millisecond),
		firstSample.Round(time.Millisecond), float64(ms.HeapAlloc)/1e6)
	t.Logf("page: first paint %.0f ms, first contentful paint %.0f ms, first rows drawn %.0f ms after navigation start", fp, fcp, rows)
	if fcp < 0 || rows <= 0 {
		t.Errorf("no paint timing: fcp %v, rows %v", fcp, rows)
	}
	screenshot(t, browser, shotDir(t, false), "scale-100k.png")
	resp, err := http.Get(url + "/api/v1/budgets/campaign-099999/chart.svg")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chart: %v %v", resp, err)
	}
	resp.Body.Close()
}

// publish100k writes n budget definitions, each reported by two sources
// (deviations spread over ±3%), to the stats topic.
func publish100k(t *testing.T, ctx context.Context, cl *kgo.Client, n int, now time.Time) {
	t.Helper()
	pub, err := stats.NewPublisher("scale.stats")
	if err != nil {
		t.Fatal(err)
	}
	begin := now.Add(-30 * time.Minute)
	var recs []*kgo.Record
	flush := func() {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		recs = recs[:0]
	}
	var reps [2][]flow.Report // the ledger entries of events/0 and events/1
	for i := range n {
		name := fmt.Sprintf("campaign-%06d", i)
		r, err := pub.BudgetRecord(stats.BudgetDef{Budget: flow.Budget{Name: name, Target: 10000, Begin: begin, End: begin.Add(time.Hour)}, At: now})
		if err != nil {
			t.Fatal(err)
		}
		passed := uint64(10000 * (0.5 + 0.03*float64(i%61-30)/30))
		reps[0] = append(reps[0], flow.Report{Budget: name, InPeriod: flow.Counters{Offered: passed, Passed: passed / 2}})
		reps[1] = append(reps[1], flow.Report{Budget: name, InPeriod: flow.Counters{Offered: passed, Passed: passed - passed/2}})
		if recs = append(recs, r); len(recs) >= 30_000 {
			flush()
		}
	}
	for p, rs := range reps {
		l, err := stats.NewLedger("scale.stats", stats.LedgerState{Source: stats.SourceName("events", int32(p)), Offset: -1}, 0)
		if err != nil {
			t.Fatal(err)
		}
		lr, err := l.Records(stats.Changes{Reports: rs}, 1, now)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, lr...)
	}
	flush()
}

// timeLists times 20 list calls of each kind, a page of 100, and logs
// the median and the largest.
func timeLists(t *testing.T, url string, n int) {
	t.Helper()
	for _, q := range []string{"sort=tree", "sort=deviation", "q=campaign-09&sort=deviation", "state=off&sort=name&offset=5000"} {
		var took []time.Duration
		for range 20 {
			t1 := time.Now()
			l := getJSON[BudgetList](t, url+"/api/v1/budgets?limit=100&"+q)
			took = append(took, time.Since(t1))
			if len(l.Budgets) != 100 || l.All != n {
				t.Fatalf("%s: %d budgets of %d", q, len(l.Budgets), l.All)
			}
		}
		slices.Sort(took)
		t.Logf("GET /api/v1/budgets?limit=100&%s: median %v, max %v (20 calls)", q, took[10].Round(time.Microsecond), took[19].Round(time.Microsecond))
	}
}
