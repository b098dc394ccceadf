package dashboard

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageInBrowser opens the page in headless Chromium over an in-memory
// source and checks what a person sees: the budget rows with their
// figures, the nesting, sort and search, a budget's page with its curve,
// and the SRM warning appearing, without a reload, once an experiment's
// counts go out of balance.
func TestPageInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := shotDir(t, false)
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	src := newFake()
	src.synthetic(250, begin)
	now := begin
	s := New(src, Topic("demo.stats"), Clock(func() time.Time { return now }))
	for k := range 31 { // 30 minutes of samples, a minute apart
		now = begin.Add(time.Duration(k) * time.Minute)
		src.progress(begin, now)
		s.Sample(now)
	}
	url := serve(t, s)

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatal(err)
	}
	rows := `document.querySelectorAll("#budget-rows tr[data-budget]")`
	waitTrue(t, ctx, "100 budget rows", rows+".length == 100")
	first := eval[string](t, ctx, rows+"[0].dataset.budget")
	second := eval[string](t, ctx, rows+"[1].dataset.budget")
	if first != "campaign-000000" || second != "campaign-000001" {
		t.Errorf("tree order starts %q, %q", first, second)
	}
	list := getJSON[BudgetList](t, url+"/api/v1/budgets?sort=tree&limit=1")
	shown := eval[string](t, ctx, rows+`[0].querySelector(".achieved").dataset.achieved`)
	if want := fmt.Sprintf("%.0f", list.Budgets[0].Achieved); shown != want {
		t.Errorf("first row shows %q achieved, the API %s", shown, want)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#budget-rows tr.off").length`); n == 0 {
		t.Error("no budget row is marked off course")
	}
	waitTrue(t, ctx, "the summary card", `document.querySelector("#card-budgets b").textContent != "–"`)
	screenshot(t, ctx, dir, "budgets.png")

	// Sorted by deviation, the first row is the one farthest off course.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/?sort=deviation")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "rows by deviation", rows+`.length == 100 && `+rows+`[0].querySelector(".dev").textContent.includes("1.50%")`)
	// Search narrows the list.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "000123")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "one row found", rows+`.length == 1 && `+rows+`[0].dataset.budget == "campaign-000123"`)

	// A budget's page draws its curve.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/budgets/campaign-000007")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "the curve", `(document.querySelector("svg.chart polyline.achieved")?.points.length ?? 0) >= 10`)
	screenshot(t, ctx, dir, "budget.png")

	// The experiments view updates in place when the split goes wrong.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/experiments")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "the experiment", `document.querySelector(".exp .badge.balanced") != null`)
	eval[bool](t, ctx, `window.loadMark = true`)
	src.experiment("ui", "skewed", now, 5000, 6000)
	now = now.Add(time.Minute)
	s.Sample(now)
	waitTrue(t, ctx, "the SRM warning", `document.querySelector('.srm-warning[data-experiment="ui/skewed"]') != null`)
	if !eval[bool](t, ctx, `window.loadMark === true`) {
		t.Error("the page reloaded")
	}
	screenshot(t, ctx, dir, "experiments.png")
}

// TestRedrawInPlace samples every 100 ms while a person reads and clicks:
// the rows and links under the pointer stay the same elements while their
// figures change, a text selection survives the samples, and twenty clicks
// on budget names in a row each land on the budget's page.
func TestRedrawInPlace(t *testing.T) {
	ctx := newBrowser(t)
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	src := newFake()
	src.synthetic(40, begin)
	var mu sync.Mutex
	now := begin
	s := New(src, Topic("demo.stats"), Clock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	tick := func() {
		mu.Lock()
		now = now.Add(5 * time.Second)
		n := now
		mu.Unlock()
		src.progress(begin, n)
		s.Sample(n)
	}
	tick()
	url := serve(t, s)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				tick()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatal(err)
	}
	row := `document.querySelector('tr[data-budget="campaign-000003"]')`
	waitTrue(t, ctx, "the rows", row+` != null`)
	eval[bool](t, ctx, `(() => {
		window.row = `+row+`; window.link = window.row.querySelector("a.name");
		window.was = window.row.querySelector(".achieved").dataset.achieved; window.seq0 = +document.body.dataset.seq;
		const r = document.createRange(); r.selectNodeContents(window.link);
		getSelection().removeAllRanges(); getSelection().addRange(r);
		return true })()`)
	waitTrue(t, ctx, "five samples that changed the row", `+document.body.dataset.seq >= window.seq0 + 5 && `+
		row+`.querySelector(".achieved").dataset.achieved !== window.was`)
	if !eval[bool](t, ctx, `window.row === `+row+` && window.link === window.row.querySelector("a.name") && window.link.isConnected`) {
		t.Error("the row or its link was replaced by a sample")
	}
	if sel := eval[string](t, ctx, `getSelection().toString()`); sel != "campaign-000003" {
		t.Errorf("selection after the samples: %q, want the budget's name", sel)
	}

	for i := range 20 {
		name := fmt.Sprintf("campaign-%06d", (7*i)%40)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`nav a[data-view="budgets"]`))); err != nil {
			t.Fatal(err)
		}
		link := fmt.Sprintf(`tr[data-budget="%s"] a.name`, name)
		waitTrue(t, ctx, "the list", `location.pathname === "/" && document.querySelector('`+link+`') != null`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(link))); err != nil {
			t.Fatalf("click %d on %s: %v", i, name, err)
		}
		waitTrue(t, ctx, name+"'s page", fmt.Sprintf(`location.pathname === "/budgets/%s" && document.querySelector("#budget-view h1")?.textContent.startsWith(%q)`, name, name))
	}
}
