package integration

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// The broker, with a data dir, is stopped mid-run with SIGTERM and
// restarted on the same port, twice (or SIGKILLed: see below). Three exactly-once
// workers and the load generator ride both out: none exits, every input id
// ends up in exactly one output topic, the counted passes equal the output
// and the budget is not overspent by more than 0.5%.
func TestBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker
	const (
		rate       = 1000
		partitions = 12
	)
	target, window := 8000, 30*time.Second
	// THROTTLER_RESTART_KILL=1 makes the second stop a SIGKILL: the
	// broker then closes the transactions the crash left open before it
	// serves (internal/broker/recover.go). THROTTLER_RESTART_KILLS=n runs
	// 2 minutes (4 times the target) with n SIGKILLs, evenly spaced, and
	// no SIGTERM.
	stops := []brokerStop{{8 * time.Second, syscall.SIGTERM}, {20 * time.Second, syscall.SIGTERM}}
	if os.Getenv("THROTTLER_RESTART_KILL") == "1" {
		stops[1].sig = syscall.SIGKILL
	}
	if s := os.Getenv("THROTTLER_RESTART_KILLS"); s != "" {
		target, window = 4*target, 2*time.Minute
		stops = evenKills(window, envInt(t, "THROTTLER_RESTART_KILLS", 1))
	}
	dir := t.TempDir()
	brk, addr := startBrokerAt(t, "127.0.0.1:0", dir, partitions)
	begin := time.Now().Add(10 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg := groupConfig(t, addr, "rst", "exactly-once", partitions, target, begin, end)
	gen := start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", "events", "--partitions", fmt.Sprint(partitions),
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", "5")
	gen.waitLine(t, "producing", 30*time.Second)
	var workers []*proc
	for i := range 3 {
		workers = append(workers, start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg,
			"--transactional-id", fmt.Sprintf("rst-w%d", i)))
	}

	for _, stop := range stops {
		time.Sleep(time.Until(begin.Add(stop.at))) // real time: the stops' schedule
		if err := brk.stop(t, stop.sig, 30*time.Second); err != nil && stop.sig == syscall.SIGTERM {
			t.Fatalf("broker after SIGTERM: %v", err)
		}
		t.Logf("t=%5.1fs broker stopped (%v); restarting in 2s", time.Since(begin).Seconds(), stop.sig)
		time.Sleep(2 * time.Second) // real time: a 2 s outage the workers ride out
		var again string
		brk, again = startBrokerAt(t, addr, dir, partitions)
		if again != addr {
			t.Fatalf("restarted broker on %s, want %s", again, addr)
		}
	}
	<-gen.done
	if gen.werr != nil {
		t.Errorf("loadgen: %v\n%s", gen.werr, gen.err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, closeAdm := admin(t, addr)
	defer closeAdm()
	if !waitFor(45*time.Second, func() bool { return caughtUp(ctx, adm, "rst", "events") }) {
		t.Fatal("the group did not consume the input to its end")
	}
	// Real time: one more stats interval (2 s) of idle workers, whose
	// reports are published on their own timers in other processes.
	time.Sleep(2500 * time.Millisecond)
	for _, w := range workers {
		if w.exited() {
			t.Errorf("%s exited during the run: %v", w.name, w.werr)
			continue
		}
		if err := w.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.name, err)
		}
	}

	inputs := readTopics(ctx, t, addr, "events")["events"]
	tl := account(inputs, readTopics(ctx, t, addr, groupTopics("rst")...), "id", "campaign")
	over := max(float64(tl.passes-target)/float64(target), 0)
	t.Logf("%v; delivered %d of %d, overspend %.3f%%", tl, tl.passes, target, 100*over)
	if len(tl.lost) > 0 || tl.duplicates > 0 || tl.unknown > 0 {
		t.Errorf("%d ids lost (e.g. %v), %d duplicated, %d unknown", len(tl.lost), tl.lost[:min(5, len(tl.lost))], tl.duplicates, tl.unknown)
	}
	// The bar: at most 0.5% over target. A restart costs the
	// workers their stats for seconds; the guards of flow/guard.go reserve
	// what stale peers may have passed, so the runs end under target (the
	// window closes while the backlog of the second stop is still read).
	if over > 0.005 {
		t.Errorf("%d passes for a target of %d, overspent by %.3f%% (bound 0.5%%)", tl.passes, target, 100*over)
	}
	inStats, inCps := countedPasses(ctx, t, addr, "rst.stats", "events", partitions, "campaign")
	t.Logf("passes in the stats topic %d, in the ledgers %d, in the output topics %d", inStats, inCps, tl.passes)
	if inStats != uint64(tl.passes) || inCps != uint64(tl.passes) {
		t.Errorf("counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", inStats, inCps, tl.passes)
	}
}

// brokerStop is a stop of the broker, at a time after the window's begin.
type brokerStop struct {
	at  time.Duration
	sig syscall.Signal
}

// evenKills returns n SIGKILLs spread evenly over window.
func evenKills(window time.Duration, n int) []brokerStop {
	var stops []brokerStop
	for i := 1; i <= n; i++ {
		stops = append(stops, brokerStop{window * time.Duration(i) / time.Duration(n+1), syscall.SIGKILL})
	}
	return stops
}
