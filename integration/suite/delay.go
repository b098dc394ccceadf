package suite

import (
	"context"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"
)

func RunDelayBudget(t *testing.T, k BrokerKind) {
	const (
		target  = 1000
		period  = time.Second
		rate    = 3000
		measure = time.Minute
	)
	brk := SharedCluster(t, k, 12)
	addr, input, passed, rejectedTopic := brk.Addr, brk.Name("events"), brk.Name("passed"), brk.Name("rejected")
	cfg := WriteFile(t, "worker.yaml", fmt.Sprintf(`brokers: [%s]
group: %s
topics:
  input: [%s]
  output: %s
  rejected: %s
  partitions: 12
sync_interval: 1s
commit_interval: 100ms
%sfields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - name: campaign
    target: %d
    period: %v
    action: delay
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, addr, brk.Name("delayed"), input, passed, rejectedTopic, k.GroupYAML(GroupTimeouts{}), target, period))

	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", "12",
		"--rate", fmt.Sprint(rate), "--duration", "150s", "--budgets", "campaign", "--users", "5000", "--seed", "11")
	WaitProducing(t, gen, addr, input)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := FollowOutput(ctx, t, addr, passed, "campaign")
	rejected := FollowOutput(ctx, t, addr, rejectedTopic, "campaign")

	var workers []*Proc
	for i := 0; i < 3; i++ {
		workers = append(workers, Start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg))
	}
	// The group settles at four partitions each; cooperative rebalances
	// end within a few seconds of the last member's join.
	for _, w := range workers {
		w.WaitLine(t, `"owned":4`, 60*time.Second)
	}
	// Real time: five seconds of the paced flow before the measure, so
	// that no period measured holds the backlog the joins left.
	time.Sleep(5 * time.Second)

	// Sample just before a period ends: the workers spend their allowance
	// early in each period and sit paused until the next one, so by then
	// the period's transactions have long been visible (a read_committed
	// reader may see a commit late on a loaded machine).
	t0 := time.Now().Truncate(period).Add(2*period - 50*time.Millisecond)
	t1 := t0.Add(measure)
	time.Sleep(time.Until(t1.Add(2 * time.Second))) // real time: the measured minute
	n0, n1 := out.At(t0), out.At(t1)
	got := float64(n1-n0) / measure.Seconds()
	short := 0
	for s := t0; s.Before(t1); s = s.Add(period) {
		if d := out.At(s.Add(period)) - out.At(s); d < target*99/100 {
			short++
			t.Logf("period ending at t=%2.0fs: %d visible", s.Add(period).Sub(t0).Seconds(), d)
		}
	}
	t.Logf("%d of %d periods under 99%% of the target (by when their records became visible)", short, int(measure/period))
	for _, w := range workers {
		if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.Name, err)
		}
	}
	// Real time: the followers read the last periods' records (the
	// figures logged below; the measure above is already taken).
	time.Sleep(time.Second)
	t.Logf("delivered %.1f events/s over %v (configured %d/s, %+.2f%%); %d rejected; %d delivered in all",
		got, measure, target, 100*(got-target)/target, rejected.Total(), out.Total())
	if math.Abs(got-target)/target > 0.02 {
		t.Errorf("delivered %.1f events/s, want within 2%% of %d", got, target)
	}
	if n := rejected.Total(); n != 0 {
		t.Errorf("%d events rejected, want none", n)
	}
}
