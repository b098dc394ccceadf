package bench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// cpuClock returns the CPU time a side's process has used so far.
type cpuClock func() time.Duration

// window is a side's round as the observer measured it: the rate and CPU
// from the group's first commit to the commit of the last record.
type window struct {
	rps, secs     float64
	cpuPerMillion float64 // seconds of CPU per million records
}

// observe polls group's committed offsets of topic until they reach
// Records, and returns the rate and the CPU (of cpu) from the group's
// first commit to the last; from start (and cpuStart) when the first
// commit it sees is the last.
func (r *runner) observe(ctx context.Context, group, topic string, start time.Time, cpu cpuClock, cpuStart time.Duration, failed <-chan error) (window, error) {
	want := int64(r.c.Records)
	var t0 time.Time
	var c0 int64
	var cpu0 time.Duration
	tick := time.NewTicker(observeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return window{}, fmt.Errorf("waiting for commits: %w", ctx.Err())
		case err := <-failed:
			if err == nil {
				err = errors.New("stopped before committing every record")
			}
			return window{}, err
		case <-tick.C:
		}
		offs, err := r.adm.FetchOffsets(ctx, group)
		if err != nil {
			continue
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil && o.At > 0 {
				sum += o.At
			}
		})
		now, cpuNow := time.Now(), cpu()
		if sum > 0 && t0.IsZero() {
			t0, c0, cpu0 = now, sum, cpuNow
		}
		if sum >= want {
			if sum == c0 {
				// Everything in the first commit seen (a tiny run): fall
				// back to the time since the side started.
				t0, c0, cpu0 = start, 0, cpuStart
			}
			d := now.Sub(t0).Seconds()
			n := float64(sum - c0)
			return window{rps: n / d, secs: d, cpuPerMillion: (cpuNow - cpu0).Seconds() * 1e6 / n}, nil
		}
	}
}

// runSide runs side until the observer has seen group commit every
// record of topic, then stops it. cpu is the side's process's CPU clock.
func (r *runner) runSide(ctx context.Context, name, group, topic string, cpu cpuClock, side func(context.Context) error) (Round, error) {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	failed := make(chan error, 1)
	start := time.Now()
	cpuStart := cpu()
	go func() { failed <- side(sctx) }()
	w, err := r.observe(ctx, group, topic, start, cpu, cpuStart, failed)
	cpuAll := (cpu() - cpuStart).Seconds() * 1e6 / float64(r.c.Records)
	stop()
	if err != nil {
		return Round{}, err
	}
	if serr := <-failed; serr != nil {
		return Round{}, serr
	}
	return Round{Side: name, RPS: w.rps, Seconds: w.secs, CPUMicros: cpuAll, CPUPerMillion: w.cpuPerMillion}, nil
}

// processCPU returns the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
