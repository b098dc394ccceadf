package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// crashSeed returns the seed of the crash schedule: THROTTLER_CRASH_SEED,
// or 1.
func crashSeed(t *testing.T) uint64 {
	s := os.Getenv("THROTTLER_CRASH_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("THROTTLER_CRASH_SEED=%q: want an unsigned integer", s)
	}
	return n
}

// crashGroup is one consumer group of three `throttler run` workers.
type crashGroup struct {
	name     string // the group, and the prefix of its topics
	input    string
	delivery string
	cfg      string
	workers  [3]*proc
	kills    int
	snaps    []killSnap // at-least-once: the offsets at each kill
	procs    []*proc    // every worker process started, killed ones too
}

// lostSessions counts the sessions the group's workers lost (their
// partitions lost: expelled by the group) in the lines they logged.
func (g *crashGroup) lostSessions() int {
	n := 0
	for _, p := range g.procs {
		p.err.mu.Lock()
		for _, l := range p.err.all {
			if strings.Contains(l, "partitions lost") {
				n++
			}
		}
		p.err.mu.Unlock()
	}
	return n
}

func (g *crashGroup) topics() []string { return groupTopics(g.name) }

func (g *crashGroup) start(t *testing.T, i int) {
	defer func() { g.procs = append(g.procs, g.workers[i]) }()
	g.workers[i] = start(t, fmt.Sprintf("%s-worker-%d", g.name, i), "run", "--config", g.cfg,
		"--transactional-id", fmt.Sprintf("%s-w%d", g.name, i))
}

// crash is one SIGKILL of a worker (of the broker when g is nil),
// restarted after a pause.
type crash struct {
	at      time.Duration // after the window's begin
	g       *crashGroup
	worker  int
	restart time.Duration
}

// killBroker SIGKILLs the broker and restarts it 2 s later on its
// address and data.
func killBroker(t *testing.T, c *cluster, begin time.Time) {
	t.Helper()
	if err := c.stop(t, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("t=%5.1fs SIGKILL broker, restart in 2s", time.Since(begin).Seconds())
	time.Sleep(2 * time.Second) // real time: a 2 s outage the workers ride out
	c.restart(t)
	t.Logf("t=%5.1fs broker restarted", time.Since(begin).Seconds())
}

// Three workers of an exactly-once group and three of an at-least-once
// group consume the same input (12 partitions, zipf-skewed users, one
// budget in ten unknown so that it is dead-lettered, an experiment layer
// routing passes to two topics) while workers are SIGKILLed at seeded
// random moments and restarted, at least five times per group.
//
// Exactly-once: every input id ends up in exactly one output, experiment,
// rejected or dead-letter topic (read_committed), the passes counted in the
// stats topic and in the ledgers equal the passes in those topics, and
// the budget is overspent by at most 0.5%. At-least-once: no id is lost,
// and every duplicate is an event a killed worker had processed and not
// committed (dupbound_test.go).
//
// THROTTLER_CRASH_SEED picks the schedule (default 1);
// THROTTLER_CRASH_BROKER_KILLS=n also SIGKILLs the broker n times. It runs
// on every kind of broker: kfake, and Apache Kafka with classic groups,
// KIP-848 groups and transactions v1.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s run across processes")
	}
	t.Parallel() // independent of the other long runs: its own broker, or names of its own
	onBrokers(t, everyKind, runCrashRecovery)
}

func runCrashRecovery(t *testing.T, k brokerKind) {
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	const (
		target     = 12000
		window     = 45 * time.Second
		rate       = 1000
		partitions = 12
		killsEach  = 5
	)
	// THROTTLER_CRASH_BROKER_KILLS=n adds n SIGKILLs of the broker,
	// each restarted 2 s later on its port and data dir: the test then
	// needs a broker of its own.
	brokerKills := 0
	if os.Getenv("THROTTLER_CRASH_BROKER_KILLS") != "" {
		brokerKills = envInt(t, "THROTTLER_CRASH_BROKER_KILLS", 1)
	}
	var brk *cluster
	if brokerKills > 0 {
		brk = ownCluster(t, k, partitions, nil)
	} else {
		brk = sharedCluster(t, k, partitions)
	}
	addr, input := brk.addr, brk.name("events")
	begin := time.Now().Add(12 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	groups := []*crashGroup{{name: brk.name("eos"), delivery: "exactly-once"}, {name: brk.name("alo"), delivery: "at-least-once"}}
	for _, g := range groups {
		g.input = input
		g.cfg = groupConfig(t, k, addr, g.name, input, g.delivery, partitions, target, begin, end)
	}

	ctx, cancel := context.WithTimeout(context.Background(), window+time.Minute)
	defer cancel()
	adm, closeAdm := admin(t, addr)
	defer closeAdm()
	gen := start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", fmt.Sprint(partitions),
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", fmt.Sprint(seed), "--flush-timeout", outageFlush.String())
	waitProducing(t, gen, addr, input)
	for _, g := range groups {
		for i := range g.workers {
			g.start(t, i)
		}
	}

	// The schedule: killsEach crashes per group at random moments of the
	// window (but its last 8 s), each restarted 0.5–2.5 s later.
	var plan []crash
	for _, g := range groups {
		for range killsEach {
			plan = append(plan, crash{
				at:      time.Duration(rng.Int64N(int64(window - 10*time.Second))),
				g:       g,
				worker:  rng.IntN(3),
				restart: 500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second))),
			})
		}
	}
	for range brokerKills { // g nil: the broker
		plan = append(plan, crash{at: time.Duration(rng.Int64N(int64(window - 10*time.Second)))})
	}
	slices.SortFunc(plan, func(a, b crash) int { return int(a.at - b.at) })
	type restart struct {
		at time.Time
		c  crash
	}
	var pending []restart
	brokerKills = 0 // those that happened
	restartDue := func(now time.Time) {
		for len(pending) > 0 && !pending[0].at.After(now) {
			c := pending[0].c
			pending = pending[1:]
			c.g.start(t, c.worker)
		}
	}
	for _, c := range plan {
		at := begin.Add(c.at)
		for time.Now().Before(at) {
			restartDue(time.Now())
			time.Sleep(min(time.Until(at), 100*time.Millisecond)) // real time: the kills' schedule
		}
		restartDue(time.Now())
		if c.g == nil {
			// At-least-once, the events processed and not committed
			// when the broker died are processed again: those past the
			// offsets committed before the kill, and before the end
			// after the restart.
			alo := groups[1]
			at := time.Since(begin)
			committed := committedOffsets(ctx, t, adm, alo.name, input)
			killBroker(t, brk, begin)
			brokerKills++
			alo.snaps = append(alo.snaps, killSnap{at: at, workers: len(alo.workers), committed: committed, end: endOffsets(ctx, t, adm, input)})
			continue
		}
		w := c.g.workers[c.worker]
		if w.exited() { // already down, its restart pending: kill the next live one
			first := c.worker
			for i := 1; i < len(c.g.workers) && w.exited(); i++ {
				c.worker = (first + i) % len(c.g.workers)
				w = c.g.workers[c.worker]
			}
			if w.exited() {
				t.Logf("t=%5.1fs no live worker in %s to kill", time.Since(begin).Seconds(), c.g.name)
				continue
			}
		}
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		c.g.kills++
		if c.g.delivery == "at-least-once" {
			c.g.snaps = append(c.g.snaps, snapKill(ctx, t, adm, c.g.name, input, time.Since(begin), 1))
		}
		t.Logf("t=%5.1fs SIGKILL %s, restart in %v", time.Since(begin).Seconds(), w.name, c.restart.Round(100*time.Millisecond))
		pending = append(pending, restart{time.Now().Add(c.restart), c})
		slices.SortFunc(pending, func(a, b restart) int { return a.at.Compare(b.at) })
	}
	for len(pending) > 0 {
		time.Sleep(time.Until(pending[0].at)) // real time: the restarts' schedule
		restartDue(time.Now())
	}
	for _, g := range groups {
		if g.kills < killsEach {
			t.Errorf("group %s: %d kills happened, want %d", g.name, g.kills, killsEach)
		}
	}
	loadDone(t, gen)

	// Every group consumes the input to its end, then stops.
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, g := range groups {
		if !waitFor(45*time.Second, func() bool { return caughtUp(ctx, adm, g.name, input) }) {
			t.Fatalf("group %s did not consume the input to its end", g.name)
		}
	}
	// Real time: one more stats interval (2 s) of idle workers, whose
	// reports are published on their own timers in other processes.
	time.Sleep(2500 * time.Millisecond)
	for _, g := range groups {
		for _, w := range g.workers {
			if err := w.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
				t.Errorf("%s after SIGTERM: %v", w.name, err)
			}
		}
	}

	inputs := readTopics(ctx, t, addr, input)[input]
	for _, g := range groups {
		g.checkOutputs(ctx, t, addr, inputs, crashRun{seed: seed, target: target, partitions: partitions, brokerKills: brokerKills})
	}
}

// crashRun is what the checks of a crash run need to know of it.
type crashRun struct {
	seed               uint64
	target, partitions int
	brokerKills        int
}

// checkOutputs checks where the group put the input events (see
// TestCrashRecovery).
func (g *crashGroup) checkOutputs(ctx context.Context, t *testing.T, addr string, inputs []*kgo.Record, run crashRun) {
	t.Helper()
	target := run.target
	outs := readTopics(ctx, t, addr, g.topics()...)
	tl := account(inputs, outs, "id", "campaign")
	over := max(float64(tl.passes-target)/float64(target), 0)
	t.Logf("seed %d, %s (%d kills, %d of the broker): %v; delivered %d of %d, overspend %.3f%%", run.seed, g.delivery, g.kills, run.brokerKills, tl, tl.passes, target, 100*over)
	if len(tl.lost) > 0 {
		t.Errorf("%s: %d input ids in no output topic, e.g. %v", g.delivery, len(tl.lost), tl.lost[:min(5, len(tl.lost))])
	}
	if tl.unknown > 0 {
		t.Errorf("%s: %d output records of no input id", g.delivery, tl.unknown)
	}
	if tl.byTopic[g.name+".dead-letter"] == 0 || tl.byTopic[g.name+".exp-a"] == 0 || tl.byTopic[g.name+".rejected"] == 0 {
		t.Errorf("%s: the run did not exercise every destination: %v", g.delivery, tl.byTopic)
	}
	if g.delivery != "exactly-once" {
		checkKillDuplicates(t, inputs, outs, g.snaps, g.lostSessions())
		return
	}
	if tl.duplicates > 0 {
		t.Errorf("exactly-once: %d duplicate outputs", tl.duplicates)
	}
	if over > 0.005 && run.brokerKills == 0 { // with broker restarts: issue 10, TestBrokerRestart's bound
		t.Errorf("exactly-once: %d passes for a target of %d, overspent by %.3f%% (bar 0.5%%)", tl.passes, target, 100*over)
	}
	inStats, inLedgers := countedPasses(ctx, t, addr, g.name+".stats", g.input, int32(run.partitions), "campaign")
	t.Logf("exactly-once: passes in the stats topic %d, in the ledgers %d, in the output topics %d", inStats, inLedgers, tl.passes)
	if inStats != uint64(tl.passes) || inLedgers != uint64(tl.passes) {
		t.Errorf("exactly-once: counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", inStats, inLedgers, tl.passes)
	}
}

// admin returns an admin client of the broker at addr.
func admin(t *testing.T, addr string) (*kadm.Client, func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), cl.Close
}

// caughtUp reports whether group has committed offsets at the end of every
// partition of topic.
func caughtUp(ctx context.Context, adm *kadm.Client, group, topic string) bool {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		c, found := committed.Lookup(o.Topic, o.Partition)
		if o.Offset > 0 && (!found || c.At < o.Offset) {
			ok = false
		}
	})
	return ok
}

// groupConfig writes the config of the workers of group, reading input
// on a broker of kind k: one budget, "campaign", of target passes between
// begin and end; an experiment layer routing 40% of users to two topics;
// rejected and dead-letter topics; short group and transaction timeouts.
func groupConfig(t *testing.T, k brokerKind, addr, group, input, delivery string, partitions, target int, begin, end time.Time) string {
	t.Helper()
	return writeFile(t, group+".yaml", fmt.Sprintf(`brokers: [%s]
group: %[2]s
delivery: %[3]s
topics:
  input: [%[8]s]
  output: %[2]s.passed
  rejected: %[2]s.rejected
  dead_letter: %[2]s.dead-letter
  partitions: %[4]d
sync_interval: 1s
commit_interval: 100ms
%[9]sfields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - name: campaign
    target: %[5]d
    begin: %[6]s
    end: %[7]s
layers:
  - name: ui
    experiments:
      - name: colour
        allocation: 40
        variants:
          - {name: a, weight: 1, topic: %[2]s.exp-a}
          - {name: b, weight: 1, topic: %[2]s.exp-b}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, addr, group, delivery, partitions, target, begin.Format(time.RFC3339), end.Format(time.RFC3339), input, k.groupYAML(fastTimeouts)))
}

// groupTopics returns the topics the workers of groupConfig write events
// to.
func groupTopics(group string) []string {
	return []string{group + ".passed", group + ".exp-a", group + ".exp-b", group + ".rejected", group + ".dead-letter"}
}
