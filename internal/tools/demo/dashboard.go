package demo

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/throttler/throttler/internal/tools/dashboard"
	"github.com/throttler/throttler/stats"
)

// startDashboard serves the web dashboard of the demo's stats topic on
// c.Dashboard and says where on c.Progress; stop ends it. It samples
// every sync interval.
func startDashboard(c Config, view *stats.View) (url string, stop func(), err error) {
	if c.Dashboard == "" {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", c.Dashboard)
	if err != nil {
		return "", nil, fmt.Errorf("demo: dashboard: %w", err)
	}
	url = "http://" + ln.Addr().String() + "/"
	srv := dashboard.New(view, dashboard.Topic(topicStats), dashboard.SampleEvery(max(c.SyncInterval, 100*time.Millisecond)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ctx, ln) // ends with ctx; a failure to serve only costs the page
	}()
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "dashboard: %s\n\n", url)
	}
	return url, func() { cancel(); wg.Wait() }, nil
}
