package dashboard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPatience bounds every wait on the page: generous, for a small
// shared machine; waits poll a condition in the page.
const browserPatience = 30 * time.Second

// newBrowser starts headless Chromium (Debian's chromium package; .ci/run
// installs it) with a fresh profile and returns a tab's context. It skips
// the test, naming what is missing, when there is no browser.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no chromium on PATH (apt-get install -y chromium, as .ci/run does): the browser test needs it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium leaves its singleton socket directories in $TMPDIR:
		// the test's own, removed after it.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*browserPatience)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// waitTrue polls a JavaScript expression in the page until it is true.
func waitTrue(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(browserPatience))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot saves a PNG of the browser's window in dir and logs its
// path.
func screenshot(t *testing.T, ctx context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}

// shotDir is where screenshots go: $THROTTLER_SCREENSHOTS when set, else
// the test's temporary directory, removed after it (the test logs the
// paths; set the variable to look at them), or, with keep, a new
// directory under the system's temp dir that stays.
func shotDir(t *testing.T, keep bool) string {
	t.Helper()
	if d := os.Getenv("THROTTLER_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if !keep {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("", "throttler-dashboard-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestScreenshotURL saves screenshots of a running dashboard's pages
// ($THROTTLER_SCREENSHOT_URL, e.g. the URL `throttler demo` prints) in
// $THROTTLER_SCREENSHOTS or else a new directory under the system's temp
// dir, kept: how docs/dashboard.png is made. It skips without the URL.
func TestScreenshotURL(t *testing.T) {
	url := os.Getenv("THROTTLER_SCREENSHOT_URL")
	if url == "" {
		t.Skip("set THROTTLER_SCREENSHOT_URL to a running dashboard's URL")
	}
	ctx := newBrowser(t)
	dir := shotDir(t, true) // kept: they are what the test is for
	for _, page := range []struct {
		path, ready, file string
		height            int64
	}{
		{"", `document.querySelectorAll("#budget-rows tr[data-budget]").length > 0`, "dashboard-budgets.png", 560},
		{"budgets/brand", `document.querySelector("svg.chart polyline.achieved") != null`, "dashboard-budget.png", 960},
		{"experiments", `document.querySelector(".exp") != null`, "dashboard-experiments.png", 560},
		{"workers", `document.querySelector("#workers-view table") != null`, "dashboard-workers.png", 720},
	} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, page.height),
			chromedp.Navigate(strings.TrimSuffix(url, "/")+"/"+page.path)); err != nil {
			t.Fatal(err)
		}
		waitTrue(t, ctx, page.file, page.ready+` && document.querySelector("#live.ok") != null`)
		screenshot(t, ctx, dir, page.file)
	}
}
