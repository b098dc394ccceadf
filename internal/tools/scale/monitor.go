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
	ready      *float64 // start to /readyz 200 (the scraper's)
	first      *float64 // start to its first delivered record
	decidedAt  time.Time
	committed0 float64      // commits when decisions were first seen
	cpu        float64      // CPU seconds at the last sample
	last       workerCounts // the newest scrape
	steady     workerCounts // at the start of the steady state
	end        workerCounts // at the end of the load
	cpuSteady  float64      // CPU seconds at the start of the steady state
	cpuEnd     float64      // and at the end of the load
	exit       string       // a kill by the harness, or an early exit
}

// monitor samples the row's processes every tick until ctx ends: memory
// (killing a worker over the RSS limit), CPU and exits; it starts a
// scraper per worker once the worker logged its address, and takes the
// snapshots at the steady state's start (bounds[0]) and the load's end
// (bounds[phases]). Scrapes run apart: a worker of many budgets exports
// megabytes of metrics, which must not hold up the RSS guard.
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
			if cpu := r.broker.cpuSeconds(); cpu > 0 {
				r.brokerLast = cpu
			}
			for _, w := range r.workers {
				if r.watch(w) {
					r.scrapes.Add(1)
					go func() { defer r.scrapes.Done(); r.scraper(ctx, w) }()
				}
			}
			if !steadyDone && !now.Before(r.bounds[0]) {
				steadyDone = true
				r.snapshot(func(w *worker, c workerCounts, cpu float64) { w.steady, w.cpuSteady = c, cpu })
			}
			if !r.endTaken && !now.Before(r.bounds[phases]) {
				r.loadEnd()
			}
		}
	}
}

// loadEnd takes the snapshot of the load's end.
func (r *run) loadEnd() {
	r.endTaken = true
	r.brokerCPU = r.brokerLast
	r.snapshot(func(w *worker, c workerCounts, cpu float64) { w.end, w.cpuEnd = c, cpu })
}

// snapshot records every worker's CPU now and, once a scrape returns, its
// counts (the last ones scraped if it fails). The scrapes run apart;
// r.scrapes waits for them.
func (r *run) snapshot(set func(*worker, workerCounts, float64)) {
	for _, w := range r.workers {
		w.mu.Lock()
		cpu, addr := w.cpu, w.addr
		set(w, w.last, cpu)
		w.mu.Unlock()
		if addr == "" {
			continue
		}
		r.scrapes.Add(1)
		go func() {
			defer r.scrapes.Done()
			c, err := scrape(r.ctx, addr)
			if err != nil {
				return
			}
			w.mu.Lock()
			w.last = c
			set(w, c, cpu)
			w.mu.Unlock()
		}()
	}
}

// watch samples one worker: its exit, memory (the RSS guard) and CPU,
// and its address; it reports whether the address was just found.
func (r *run) watch(w *worker) (found bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if done, err := w.exited(); done {
		if w.exit == "" {
			w.exit = fmt.Sprintf("exited during the run: %s", exitText(err))
		}
		return false
	}
	if cpu := w.cpuSeconds(); cpu > 0 {
		w.cpu = cpu
	}
	if rss := w.sampleMemory(); r.c.MaxRSS > 0 && rss > r.c.MaxRSS {
		w.exit = fmt.Sprintf("killed by the harness: RSS %s over the limit of %s", size(rss), size(r.c.MaxRSS))
		w.kill()
		return false
	}
	if w.addr == "" {
		w.addr = httpAddr(w.err)
		return w.addr != ""
	}
	return false
}

// scraper polls a worker's metrics until its first delivery, or ctx
// ends: at most a quarter of the time (a large page takes long), at
// least a second apart.
func (r *run) scraper(ctx context.Context, w *worker) {
	w.mu.Lock()
	addr := w.addr
	w.mu.Unlock()
	for ctx.Err() == nil {
		t0 := time.Now()
		w.mu.Lock()
		ready := w.ready != nil
		w.mu.Unlock()
		if !ready && isReady(ctx, addr) {
			s := t0.Sub(w.started).Seconds()
			w.mu.Lock()
			w.ready = &s
			w.mu.Unlock()
		}
		c, err := scrape(ctx, addr)
		wait := max(time.Second, 3*time.Since(t0))
		if err == nil && w.scraped(c, t0) {
			return
		}
		if done, _ := w.exited(); done {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// scraped takes in a scrape of at and reports whether the worker's first
// delivery is now known.
func (w *worker) scraped(c workerCounts, at time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = c
	switch {
	case w.decidedAt.IsZero() && c.Decided > 0:
		// Decisions are counted as their commit starts; the first commit
		// after them confirms the delivery.
		w.decidedAt, w.committed0 = at, c.Committed
	case !w.decidedAt.IsZero() && c.Committed > w.committed0:
		s := w.decidedAt.Sub(w.started).Seconds()
		w.first = &s
	}
	return w.first != nil
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
