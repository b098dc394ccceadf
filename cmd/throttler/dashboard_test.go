package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/throttler/throttler/internal/tools/dashboard"
)

// TestDashboardCommand serves the dashboard of a stats topic on port 0,
// reads the printed URL, checks the API's summary and the page, and stops
// it as a signal would.
func TestDashboardCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fixClock(t, statusAt)
	addr := statusCluster(t, ctx, statusAt)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- dispatch(runCtx, []string{"dashboard", "--brokers", addr, "--stats-topic", "g.stats", "--listen", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	if !poll(ctx, func() bool { url = urlRE.FindString(stdout.String()); return url != "" }) {
		t.Fatalf("no URL printed:\n%s\n%s", stdout.String(), stderr.String())
	}
	resp, err := http.Get(url + "api/v1/summary")
	if err != nil {
		t.Fatal(err)
	}
	var sm dashboard.Summary
	err = json.NewDecoder(resp.Body).Decode(&sm)
	resp.Body.Close()
	if err != nil || sm.StatsTopic != "g.stats" || sm.Budgets.Total != 2 || sm.Experiments.Total != 2 || sm.Experiments.Mismatches != 1 {
		t.Fatalf("summary %+v, %v", sm, err)
	}
	page, err := http.Get(url)
	if err != nil || page.StatusCode != 200 || page.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page %v %v", page, err)
	}
	page.Body.Close()
	stop()
	if code := <-codeCh; code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
}

func TestDashboardBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--sample", "1ms"}, {"--listen", "nope"}, {"--stale-after", "0s"}, {"--stats-topic", ""}, {"--timeout", "-1s"},
	} {
		code, _, stderr := runCLI(t, context.Background(), append([]string{"dashboard", "--brokers", "127.0.0.1:1"}, args...)...)
		if code != 2 || !regexp.MustCompile(`flag `+args[0]).MatchString(stderr) {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}

// TestDashboardGuard serves the dashboard with a bearer token: the API
// answers 401 without it, 200 with it and the security headers, and 421
// to a request naming a host it was not told of (DNS rebinding).
func TestDashboardGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fixClock(t, statusAt)
	addr := statusCluster(t, ctx, statusAt)
	t.Setenv("THROTTLER_TEST_DASHBOARD_TOKEN", "tok3n")
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- dispatch(runCtx, []string{"dashboard", "--brokers", addr, "--stats-topic", "g.stats", "--listen", "127.0.0.1:0",
			"--http-auth-token-env", "THROTTLER_TEST_DASHBOARD_TOKEN", "--allowed-host", "dash.example.com"}, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	if !poll(ctx, func() bool { url = urlRE.FindString(stdout.String()); return url != "" }) {
		t.Fatalf("no URL printed:\n%s\n%s", stdout.String(), stderr.String())
	}
	get := func(host, token string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"api/v1/summary", nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := get("", ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", r.StatusCode)
	}
	r := get("", "tok3n")
	if r.StatusCode != 200 || r.Header.Get("X-Content-Type-Options") != "nosniff" || !regexp.MustCompile(`frame-ancestors 'none'`).MatchString(r.Header.Get("Content-Security-Policy")) {
		t.Fatalf("with the token: %d %v", r.StatusCode, r.Header)
	}
	if r := get("dash.example.com:8080", "tok3n"); r.StatusCode != 200 {
		t.Fatalf("an allowed host: %d", r.StatusCode)
	}
	if r := get("evil.example.net", "tok3n"); r.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("another host: %d", r.StatusCode)
	}
	stop()
	if code := <-codeCh; code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
}
