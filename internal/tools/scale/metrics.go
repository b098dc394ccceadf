package scale

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// workerCounts are what the harness reads of a worker's metrics.
type workerCounts struct {
	// Decided sums throttler_passed_total, throttler_rejected_total and
	// throttler_dead_lettered_total over their labels: events the worker
	// decided (counted at the start of each commit).
	Decided float64
	// Committed and Aborted are throttler_commits_total{result}.
	Committed, Aborted float64
	// Requests sums throttler_kafka_requests_total: what the worker's
	// clients wrote to the brokers.
	Requests float64
}

// scrape reads the counts from a worker's /metrics. It scans the text
// for the few series it needs rather than parsing every family: with
// per-budget series, a worker of 100,000 budgets exports megabytes.
func scrape(ctx context.Context, addr string) (workerCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return workerCounts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return workerCounts{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workerCounts{}, fmt.Errorf("metrics of %s: %s", addr, resp.Status)
	}
	var c workerCounts
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "throttler_") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		var dst *float64
		switch {
		case name == "throttler_passed_total", name == "throttler_rejected_total", name == "throttler_dead_lettered_total":
			dst = &c.Decided
		case name == "throttler_commits_total" && strings.Contains(line, `result="committed"`):
			dst = &c.Committed
		case name == "throttler_commits_total" && strings.Contains(line, `result="aborted"`):
			dst = &c.Aborted
		case name == "throttler_kafka_requests_total":
			dst = &c.Requests
		default:
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			*dst += v
		}
	}
	return c, sc.Err()
}
