package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// worker is a `throttler run` process of a row and what the monitor
// learned of it.
type worker struct {
	*proc
	i int

	mu         sync.Mutex
	addr       string   // of its metrics, once logged
	ready      *float64 // start to /readyz 200
	first      *float64 // start to its first delivered record
	decidedAt  time.Time
	committed0 float64 // commits when decisions were first seen
	nextScrape time.Time
	last       workerCounts // the newest scrape
	steady     workerCounts // at the start of the steady state
	end        workerCounts // at the end of the load
	cpuSteady  float64      // CPU seconds at the start of the steady state
	cpuEnd     float64      // and at the end of the load
	exit       string       // a kill by the harness, or an early exit
}

// monitor samples the row's processes every tick until ctx ends: memory
// (killing a worker over the RSS limit), exits, the metrics of workers
// that have not delivered yet, and the snapshots at the steady state's
// start (bounds[0]) and the load's end (bounds[phases]).
func (r *run) monitor(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	steadyDone := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			r.broker.sampleMemory()
			for _, w := range r.workers {
				r.watch(ctx, w, now)
			}
			if !steadyDone && !now.Before(r.bounds[0]) {
				steadyDone = true
				r.snapshot(ctx, func(w *worker, c workerCounts, cpu float64) { w.steady, w.cpuSteady = c, cpu })
			}
			if !r.endTaken && !now.Before(r.bounds[phases]) {
				r.loadEnd(ctx)
			}
		}
	}
}

// loadEnd takes the snapshot of the load's end.
func (r *run) loadEnd(ctx context.Context) {
	r.endTaken = true
	r.brokerCPU = r.broker.cpuSeconds()
	r.snapshot(ctx, func(w *worker, c workerCounts, cpu float64) { w.end, w.cpuEnd = c, cpu })
}

// snapshot scrapes every worker and records its counts and CPU.
func (r *run) snapshot(ctx context.Context, set func(*worker, workerCounts, float64)) {
	for _, w := range r.workers {
		cpu := w.cpuSeconds()
		w.mu.Lock()
		addr, c := w.addr, w.last
		w.mu.Unlock()
		if addr != "" {
			if got, err := scrape(ctx, addr); err == nil {
				c = got
			}
		}
		w.mu.Lock()
		w.last = c
		set(w, c, cpu)
		w.mu.Unlock()
	}
}

// watch samples one worker.
func (r *run) watch(ctx context.Context, w *worker, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if done, err := w.exited(); done {
		if w.exit == "" {
			w.exit = fmt.Sprintf("exited during the run: %s", exitText(err))
		}
		return
	}
	if rss := w.sampleMemory(); r.c.MaxRSS > 0 && rss > r.c.MaxRSS {
		w.exit = fmt.Sprintf("killed by the harness: RSS %s over the limit of %s", size(rss), size(r.c.MaxRSS))
		w.kill()
		return
	}
	if w.addr == "" {
		w.addr = httpAddr(w.err)
	}
	if w.addr == "" || w.first != nil || now.Before(w.nextScrape) {
		return
	}
	if w.ready == nil && isReady(ctx, w.addr) {
		s := now.Sub(w.started).Seconds()
		w.ready = &s
	}
	t0 := time.Now()
	c, err := scrape(ctx, w.addr)
	// A worker of many budgets exports a large page: scrape at most a
	// quarter of the time.
	w.nextScrape = time.Now().Add(max(time.Second, 3*time.Since(t0)))
	if err != nil {
		return
	}
	w.last = c
	switch {
	case w.decidedAt.IsZero() && c.Decided > 0:
		// Decisions are counted as their commit starts; the first commit
		// after them confirms the delivery.
		w.decidedAt, w.committed0 = now, c.Committed
	case !w.decidedAt.IsZero() && c.Committed > w.committed0:
		s := w.decidedAt.Sub(w.started).Seconds()
		w.first = &s
	}
}

// httpAddr returns the metrics address a worker logged ("http
// listening"), or "".
func httpAddr(logPath string) string {
	line, ok := findLine(logPath, `"http listening"`)
	if !ok {
		return ""
	}
	var l struct {
		Addr string `json:"addr"`
		URL  string `json:"url"`
	}
	if json.Unmarshal([]byte(line), &l) != nil {
		return ""
	}
	return l.Addr
}

func isReady(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
