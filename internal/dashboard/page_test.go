package dashboard

import (
	"fmt"
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
	dir := shotDir(t)
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
