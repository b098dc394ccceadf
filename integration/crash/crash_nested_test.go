package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	. "github.com/throttler/throttler/integration/suite"
)

// Three `throttler run` workers of an exactly-once group pace a nested
// budget: a parent of 11,500 passes over a paced child (8,000) and a
// scored one (6,000), each child half of the traffic (1,000 events/s over
// 12 partitions, 60 s window). Four workers are SIGKILLed at seeded
// random moments of the window (but its last 8 s), each restarted 1.5 s
// later. The parent ends at most 0.1% over its target, and the passes
// counted in the stats topic and the ledgers equal those in the output
// topic.
//
// THROTTLER_CRASH_SEED picks the schedule (default 1).
func TestCrashNested(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s run across processes")
	}
	t.Parallel() // its own broker
	seed := CrashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x9e57))
	const (
		parent     = 11500
		window     = 60 * time.Second
		rate       = 1000
		partitions = 12
		kills      = 4
	)
	_, addr := StartBroker(t, partitions)
	begin := time.Now().Add(12 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	g := &CrashGroup{Name: "nested", Delivery: "exactly-once"}
	g.Cfg = WriteFile(t, "nested.yaml", fmt.Sprintf(`brokers: [%s]
group: nested
delivery: exactly-once
topics:
  input: [events]
  output: nested.passed
  rejected: nested.rejected
  dead_letter: nested.dead-letter
  partitions: %d
sync_interval: 1s
commit_interval: 100ms
timeouts: {session: 6s, rebalance: 5s, heartbeat: 500ms, transaction: 8s}
fields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - {name: account, target: %d, begin: %s, end: %s}
  - {name: camp-a, target: 8000, begin: %[4]s, end: %[5]s, parent: account}
  - {name: camp-b, target: 6000, begin: %[4]s, end: %[5]s, parent: account, scored: true}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, addr, partitions, parent, begin.Format(time.RFC3339), end.Format(time.RFC3339)))

	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", "events", "--partitions", fmt.Sprint(partitions),
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "camp-a,camp-b", "--users", "2000", "--skew", "1.2", "--seed", fmt.Sprint(seed))
	gen.WaitLine(t, "producing", 30*time.Second)
	for i := range g.Workers {
		g.Start(t, i)
	}

	// The schedule: kills at random moments of the window but its last
	// 8 s, at least 3 s apart, each worker restarted 1.5 s later.
	var at []time.Duration
	for len(at) < kills {
		d := time.Duration(rng.Int64N(int64(window - 8*time.Second)))
		ok := true
		for _, x := range at {
			ok = ok && (d-x >= 3*time.Second || x-d >= 3*time.Second)
		}
		if ok {
			at = append(at, d)
		}
	}
	for i := 1; i < len(at); i++ {
		for j := i; j > 0 && at[j] < at[j-1]; j-- {
			at[j], at[j-1] = at[j-1], at[j]
		}
	}
	for _, d := range at {
		time.Sleep(time.Until(begin.Add(d))) // real time: the kills' schedule
		i := rng.IntN(len(g.Workers))
		w := g.Workers[i]
		_ = w.Cmd.Process.Signal(syscall.SIGKILL)
		<-w.Done
		g.Kills++
		t.Logf("t=%5.1fs SIGKILL %s, restart in 1.5s", time.Since(begin).Seconds(), w.Name)
		time.Sleep(1500 * time.Millisecond) // real time: the worker is down
		g.Start(t, i)
	}
	<-gen.Done

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm, closeAdm := Admin(t, addr)
	defer closeAdm()
	if !WaitFor(45*time.Second, func() bool { return CaughtUp(ctx, adm, g.Name, "events") }) {
		t.Fatalf("the group did not consume the input to its end")
	}
	// Real time: one more stats interval of idle workers, whose reports
	// are published on their own timers.
	time.Sleep(2500 * time.Millisecond)
	for _, w := range g.Workers {
		if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.Name, err)
		}
	}

	inputs := ReadTopics(ctx, t, addr, "events")["events"]
	outs := ReadTopics(ctx, t, addr, "nested.passed", "nested.rejected", "nested.dead-letter")
	a, b := Account(inputs, outs, "id", "camp-a"), Account(inputs, outs, "id", "camp-b")
	passes := a.Passes + b.Passes
	over := float64(passes-parent) / parent
	t.Logf("seed %d, %d kills: account %d passes (%+.3f%%), camp-a %d, camp-b %d; %v", seed, g.Kills, passes, 100*over, a.Passes, b.Passes, a)
	if len(a.Lost) > 0 || a.Duplicates > 0 || a.Unknown > 0 {
		t.Errorf("%d input ids in no output topic, %d duplicates, %d unknown outputs", len(a.Lost), a.Duplicates, a.Unknown)
	}
	if over > 0.001 {
		t.Errorf("account: %d passes for a target of %d, %.3f%% over (bar 0.1%%)", passes, parent, 100*over)
	}
	inStats, inLedgers := CountedPasses(ctx, t, addr, "nested.stats", "events", partitions, "account")
	if inStats != uint64(passes) || inLedgers != uint64(passes) {
		t.Errorf("account: counted passes (stats %d, ledgers %d) differ from the %d passes in the output topic", inStats, inLedgers, passes)
	}
}
