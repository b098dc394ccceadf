package scale

import (
	"context"
	"math"
	"os/exec"
	"syscall"
	"time"

	"github.com/throttler/throttler/stats"
	"github.com/twmb/franz-go/pkg/kgo"
)

// finish takes the figures once the load is over and the workers drained
// (or gave up): it stops the workers, reads the destination topics to
// their end, then the input and the coordination topics whole; then it
// has the broker compact its topics and times `throttler status`.
func (r *run) finish(ctx context.Context, stopTail context.CancelFunc) error {
	final := make([]workerCounts, len(r.workers))
	for i, w := range r.workers {
		w.sampleMemory()
		final[i] = w.last
		if c, err := scrapeWorker(ctx, w); err == nil {
			final[i] = c
		}
	}
	r.broker.sampleMemory()
	for _, w := range r.workers {
		if exit := w.stop(30 * time.Second); exit != "" && w.exit == "" {
			w.exit = exit
		}
	}
	r.row.IDs.Complete = r.tail.finish(ctx, stopTail, 45*time.Second)
	if !r.row.IDs.Complete {
		r.note("the destination topics were not read to their end")
	}
	input, err := r.readInput(ctx)
	if err != nil {
		return err
	}
	vols, kinds, err := volumes(ctx, r.opts, 10*time.Minute, coordinationTopics...)
	if err != nil {
		return err
	}
	r.figures(final, input, vols, kinds)
	r.compact(ctx)
	r.timeStatus(ctx)
	return nil
}

// compact has the broker compact its topics (SIGUSR1) and waits for it to
// say so: the status is then timed over what a running deployment's
// stats topic holds, not over the whole run's records.
func (r *run) compact(ctx context.Context) {
	r.broker.cmd.Process.Signal(syscall.SIGUSR1)
	if _, err := r.broker.waitLine(ctx, r.broker.err, `"compacted"`, 5*time.Minute); err != nil {
		r.note("compaction before status: %v", err)
	}
}

func scrapeWorker(ctx context.Context, w *worker) (workerCounts, error) {
	w.mu.Lock()
	addr := w.addr
	w.mu.Unlock()
	if addr == "" {
		return workerCounts{}, errNothing
	}
	return scrape(ctx, addr)
}

// timeStatus times `throttler status --top 20` against the row's stats
// topic.
func (r *run) timeStatus(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, r.c.Binary, "status", "--brokers", r.addr, "--stats-topic", statsTopic,
		"--top", "20", "--timeout", "90s").CombinedOutput()
	if err != nil {
		r.note("status failed: %v: %.200s", err, out)
		return
	}
	s := time.Since(t0).Seconds()
	r.row.StatusSeconds = &s
}

// readInput reads the input topic: its volume and which id sequences it
// holds.
func (r *run) readInput(ctx context.Context) ([]bool, error) {
	var ids []bool
	err := readAll(ctx, r.opts, true, 5*time.Minute, func(rec *kgo.Record) {
		r.row.Input.add(rec)
		if seq, ok := idSeq(rec.Value); ok {
			for seq >= uint64(len(ids)) {
				ids = append(ids, make([]bool, max(1024, len(ids)))...)
			}
			ids[seq] = true
		}
	}, inputTopic)
	return ids, err
}

// figures fills the row from what was measured.
func (r *run) figures(final []workerCounts, input []bool, vols, kinds map[string]Volume) {
	row := &r.row
	row.CoordinationTopics, row.StatsKinds = vols, kinds
	for t, v := range vols {
		row.Coordination.Records += v.Records
		row.Coordination.Bytes += v.Bytes
		if v.Largest > row.Coordination.Largest {
			row.Coordination.Largest, row.LargestTopic = v.Largest, t
		}
	}
	if row.Input.Bytes > 0 {
		row.BytesRatio = float64(row.Coordination.Bytes) / float64(row.Input.Bytes)
		row.RecordsRatio = float64(row.Coordination.Records) / float64(row.Input.Records)
		row.LedgerBytesRatio = float64(row.StatsKinds[stats.KindLedger.String()].Bytes) / float64(row.Input.Bytes)
	}
	load := r.c.Duration.Seconds()
	steady := r.bounds[phases].Sub(r.bounds[0]).Seconds()
	for i, w := range r.workers {
		end := w.cpuEnd
		if end == 0 { // ended before the end of the load: its last sample
			end = w.cpu
		}
		wr := WorkerRow{CPU: end / load, CPUSteady: max(end-w.cpuSteady, 0) / steady, PeakRSS: w.peak(),
			RequestsSteady: max(w.end.Requests-w.steady.Requests, 0) / steady,
			Ready:          w.ready, FirstDelivery: w.first, Exit: w.exit}
		if w.exit != "" {
			r.note("worker %d %s", i+1, w.exit)
		}
		row.Workers = append(row.Workers, wr)
		row.CPU += wr.CPU
		row.CPUSteady += wr.CPUSteady
		row.Transactions.Committed += final[i].Committed
		row.Transactions.Aborted += final[i].Aborted
		row.Transactions.AbortedSteady += w.end.Aborted - w.steady.Aborted
	}
	row.Broker.CPU = r.brokerCPU / load
	row.Broker.PeakRSS = r.broker.peak()
	if first := r.tail.firstDelivery(); !first.IsZero() {
		s := first.Sub(r.start).Seconds()
		row.FirstDelivery = &s
	}
	for _, in := range input {
		if in {
			row.IDs.Input++
		}
	}
	row.IDs.Delivered, row.IDs.Lost, row.IDs.Duplicated = r.tail.deliveries(input)
	row.ActiveBudgets = r.tail.activeBudgets()
	r.pacing()
}

// pacing fills the paced budgets' figures and the gaps.
func (r *run) pacing() {
	row := &r.row
	t := r.tail
	t.mu.Lock()
	defer t.mu.Unlock()
	target := r.c.pacedTarget()
	for i, n := range t.passes {
		dev := float64(n)/target - 1
		row.Paced = append(row.Paced, PacedRow{Budget: pacedName(i), Target: target, Passed: n, Deviation: dev})
		row.PacedMaxDeviation = max(row.PacedMaxDeviation, math.Abs(dev))
	}
	if g := max(t.gaps[phaseSteady], t.gaps[phaseAfter]); g > 0 {
		s := g.Seconds()
		row.LongestGap = &s
	}
	if r.c.ChurnRate > 0 {
		row.Churn = &ChurnRow{Rate: r.c.ChurnRate, Adds: r.churned.Adds, Changes: r.churned.Changes, Deletes: r.churned.Deletes,
			LongestGap: t.gaps[phaseChurn].Seconds(), AfterLongestGap: t.gaps[phaseAfter].Seconds()}
	}
	if t.badIDs > 0 {
		r.note("%d delivered records without a load generator id", t.badIDs)
	}
}
