package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// TestHostileFigures serves budgets no reader of the stats topic lets
// through, as another Source could hand them (a target of 1.7e308, one of
// 5e-324 with passes, rewards near the float64 limit): every API answer
// is 200 with valid JSON, and the chart is a bounded SVG, each within a
// deadline of the request (before, chart.svg streamed without end and
// the JSON answers were empty).
func TestHostileFigures(t *testing.T) {
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFake()
	for _, b := range []flow.Budget{
		{Name: "huge", Target: 1.7e308, Begin: begin, End: begin.Add(time.Hour)},
		{Name: "tiny", Target: 5e-324, Begin: begin, End: begin.Add(time.Hour)},
		{Name: "rich", Target: 10, Begin: begin, End: begin.Add(time.Hour), Rewards: true},
	} {
		f.budget(b)
	}
	now := begin
	s := New(f, Clock(func() time.Time { return now }))
	for i := range 5 {
		now = begin.Add(time.Duration(i+1) * time.Minute)
		f.report("huge", "events/0", now, 100, uint64(50*i), 0)
		f.report("tiny", "events/0", now, 100, uint64(50*i), 0)
		f.report("rich", "events/0", now, 100, 50, 1.7e308*float64(i))
		s.Sample(now)
	}
	url := serve(t, s)
	for _, path := range []string{"/api/v1/summary", "/api/v1/budgets", "/api/v1/budgets?sort=deviation", "/api/v1/budgets/huge",
		"/api/v1/budgets/tiny", "/api/v1/budgets/rich", "/api/v1/experiments", "/api/v1/workers",
		"/api/v1/budgets/huge/chart.svg", "/api/v1/budgets/tiny/chart.svg", "/api/v1/budgets/rich/chart.svg"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("GET %s: %v", path, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		cancel()
		switch {
		case err != nil:
			t.Fatalf("GET %s: reading: %v", path, err)
		case resp.StatusCode != 200:
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		case strings.HasSuffix(path, ".svg"):
			if len(body) >= 1<<20 || !strings.HasSuffix(string(body), "</svg>") || strings.Contains(string(body), "NaN") {
				t.Fatalf("GET %s: %d bytes, not a bounded SVG: ...%q", path, len(body), body[max(0, len(body)-80):])
			}
		case !json.Valid(body) || len(body) == 0:
			t.Fatalf("GET %s: not JSON: %q", path, body[:min(len(body), 200)])
		}
	}
}

// TestEventStreamsBounded: one event stream more than MaxStreams is
// refused with 503.
func TestEventStreamsBounded(t *testing.T) {
	s := New(newFake(), MaxStreams(2))
	url := serve(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		defer resp.Body.Close()
	}
	resp, err := http.Get(url + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third stream: %d, want 503", resp.StatusCode)
	}
}

// TestParkedPartitionsShown: a partition its owner parked is counted in
// the summary and carries its reason in the workers' list.
func TestParkedPartitionsShown(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFake()
	f.workers = []stats.WorkerStatus{{Worker: "w-1", At: now, Started: now, SyncInterval: time.Second,
		Sources: []stats.SourceStatus{{Source: "events/0", Lag: -1, Offset: 5}, {Source: "events/1", Offset: 7}},
		Parked:  []stats.ParkedSource{{Source: "events/0", Reason: "ledger corrupt"}}}}
	s := New(f, Clock(func() time.Time { return now }))
	url := serve(t, s)
	sm := getJSON[Summary](t, url+"/api/v1/summary")
	wl := getJSON[WorkerList](t, url+"/api/v1/workers")
	if sm.Workers.Parked != 1 || len(wl.Partitions) != 2 || wl.Partitions[0].Parked != "ledger corrupt" || wl.Partitions[1].Parked != "" || wl.Workers[0].Parked != 1 {
		t.Fatalf("summary %+v, workers %+v", sm.Workers, wl)
	}
}
