package suite

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

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CrashSeed returns the seed of the crash schedule: THROTTLER_CRASH_SEED,
// or 1.
func CrashSeed(t *testing.T) uint64 {
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

// CrashGroup is one consumer group of three `throttler run` workers.
type CrashGroup struct {
	Name     string // the group, and the prefix of its topics
	Input    string
	Delivery string
	Cfg      string
	Workers  [3]*Proc
	Kills    int
	Snaps    []KillSnap // at-least-once: the offsets at each kill
	Procs    []*Proc    // every worker process started, killed ones too
}

// LostSessions counts the sessions the group's workers lost (their
// partitions lost: expelled by the group) in the lines they logged.
func (g *CrashGroup) LostSessions() int {
	n := 0
	for _, p := range g.Procs {
		n += p.Err.Count("partitions lost")
	}
	return n
}

func (g *CrashGroup) Topics() []string { return GroupTopics(g.Name) }

func (g *CrashGroup) Start(t *testing.T, i int) {
	defer func() { g.Procs = append(g.Procs, g.Workers[i]) }()
	g.Workers[i] = Start(t, fmt.Sprintf("%s-worker-%d", g.Name, i), "run", "--config", g.Cfg,
		"--transactional-id", fmt.Sprintf("%s-w%d", g.Name, i))
}

// Crash is one SIGKILL of a worker (of the broker when g is nil),
// restarted after a pause.
type Crash struct {
	At      time.Duration // after the window's begin
	G       *CrashGroup
	Worker  int
	Restart time.Duration
}

// KillBroker SIGKILLs the broker and restarts it 2 s later on its
// address and data.
func KillBroker(t *testing.T, c *Cluster, begin time.Time) {
	t.Helper()
	if err := c.Stop(t, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("t=%5.1fs SIGKILL broker, restart in 2s", time.Since(begin).Seconds())
	time.Sleep(2 * time.Second) // real time: a 2 s outage the workers ride out
	c.Restart(t)
	t.Logf("t=%5.1fs broker restarted", time.Since(begin).Seconds())
}

func RunCrashRecovery(t *testing.T, k BrokerKind) {
	seed := CrashSeed(t)
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
		brokerKills = EnvInt(t, "THROTTLER_CRASH_BROKER_KILLS", 1)
	}
	var brk *Cluster
	if brokerKills > 0 {
		brk = OwnCluster(t, k, partitions, nil)
	} else {
		brk = SharedCluster(t, k, partitions)
	}
	addr, input := brk.Addr, brk.Name("events")
	begin := time.Now().Add(12 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	groups := []*CrashGroup{{Name: brk.Name("eos"), Delivery: "exactly-once"}, {Name: brk.Name("alo"), Delivery: "at-least-once"}}
	for _, g := range groups {
		g.Input = input
		g.Cfg = GroupConfig(t, k, addr, g.Name, input, g.Delivery, partitions, target, begin, end)
	}

	ctx, cancel := context.WithTimeout(context.Background(), window+time.Minute)
	defer cancel()
	adm, closeAdm := Admin(t, addr)
	defer closeAdm()
	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", input, "--partitions", fmt.Sprint(partitions),
		"--rate", fmt.Sprint(rate), "--duration", time.Until(end.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", fmt.Sprint(seed), "--flush-timeout", OutageFlush.String())
	WaitProducing(t, gen, addr, input)
	for _, g := range groups {
		for i := range g.Workers {
			g.Start(t, i)
		}
	}

	// The schedule: killsEach crashes per group at random moments of the
	// window (but its last 8 s), each restarted 0.5–2.5 s later.
	var plan []Crash
	for _, g := range groups {
		for range killsEach {
			plan = append(plan, Crash{
				At:      time.Duration(rng.Int64N(int64(window - 10*time.Second))),
				G:       g,
				Worker:  rng.IntN(3),
				Restart: 500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second))),
			})
		}
	}
	for range brokerKills { // g nil: the broker
		plan = append(plan, Crash{At: time.Duration(rng.Int64N(int64(window - 10*time.Second)))})
	}
	slices.SortFunc(plan, func(a, b Crash) int { return int(a.At - b.At) })
	type restart struct {
		at time.Time
		c  Crash
	}
	var pending []restart
	brokerKills = 0 // those that happened
	restartDue := func(now time.Time) {
		for len(pending) > 0 && !pending[0].at.After(now) {
			c := pending[0].c
			pending = pending[1:]
			c.G.Start(t, c.Worker)
		}
	}
	for _, c := range plan {
		at := begin.Add(c.At)
		for time.Now().Before(at) {
			restartDue(time.Now())
			time.Sleep(min(time.Until(at), 100*time.Millisecond)) // real time: the kills' schedule
		}
		restartDue(time.Now())
		if c.G == nil {
			// At-least-once, the events processed and not committed
			// when the broker died are processed again: those past the
			// offsets committed before the kill, and before the end
			// after the restart.
			alo := groups[1]
			at := time.Since(begin)
			committed := CommittedOffsets(ctx, t, adm, alo.Name, input)
			KillBroker(t, brk, begin)
			brokerKills++
			alo.Snaps = append(alo.Snaps, KillSnap{At: at, Workers: len(alo.Workers), Committed: committed, End: EndOffsets(ctx, t, adm, input)})
			continue
		}
		w := c.G.Workers[c.Worker]
		if w.Exited() { // already down, its restart pending: kill the next live one
			first := c.Worker
			for i := 1; i < len(c.G.Workers) && w.Exited(); i++ {
				c.Worker = (first + i) % len(c.G.Workers)
				w = c.G.Workers[c.Worker]
			}
			if w.Exited() {
				t.Logf("t=%5.1fs no live worker in %s to kill", time.Since(begin).Seconds(), c.G.Name)
				continue
			}
		}
		_ = w.Cmd.Process.Signal(syscall.SIGKILL)
		<-w.Done
		c.G.Kills++
		if c.G.Delivery == "at-least-once" {
			c.G.Snaps = append(c.G.Snaps, SnapKill(ctx, t, adm, c.G.Name, input, time.Since(begin), 1))
		}
		t.Logf("t=%5.1fs SIGKILL %s, restart in %v", time.Since(begin).Seconds(), w.Name, c.Restart.Round(100*time.Millisecond))
		pending = append(pending, restart{time.Now().Add(c.Restart), c})
		slices.SortFunc(pending, func(a, b restart) int { return a.at.Compare(b.at) })
	}
	for len(pending) > 0 {
		time.Sleep(time.Until(pending[0].at)) // real time: the restarts' schedule
		restartDue(time.Now())
	}
	for _, g := range groups {
		if g.Kills < killsEach {
			t.Errorf("group %s: %d kills happened, want %d", g.Name, g.Kills, killsEach)
		}
	}
	LoadDone(t, gen)

	// Every group consumes the input to its end, then stops.
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, g := range groups {
		if !WaitFor(45*time.Second, func() bool { return CaughtUp(ctx, adm, g.Name, input) }) {
			t.Fatalf("group %s did not consume the input to its end: %s", g.Name, Stall(ctx, adm, g.Name, input, GroupTopics(g.Name)...))
		}
	}
	// Real time: one more stats interval (2 s) of idle workers, whose
	// reports are published on their own timers in other processes.
	time.Sleep(2500 * time.Millisecond)
	for _, g := range groups {
		for _, w := range g.Workers {
			if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
				t.Errorf("%s after SIGTERM: %v", w.Name, err)
			}
		}
	}

	inputs := ReadTopics(ctx, t, addr, input)[input]
	for _, g := range groups {
		g.CheckOutputs(ctx, t, addr, inputs, CrashRun{Seed: seed, Target: target, Partitions: partitions, BrokerKills: brokerKills})
	}
}

// CrashRun is what the checks of a crash run need to know of it.
type CrashRun struct {
	Seed               uint64
	Target, Partitions int
	BrokerKills        int
}

// CheckOutputs checks where the group put the input events (see
// TestCrashRecovery).
func (g *CrashGroup) CheckOutputs(ctx context.Context, t *testing.T, addr string, inputs []*kgo.Record, run CrashRun) {
	t.Helper()
	target := run.Target
	outs := ReadTopics(ctx, t, addr, g.Topics()...)
	tl := Account(inputs, outs, "id", "campaign")
	over := max(float64(tl.Passes-target)/float64(target), 0)
	t.Logf("seed %d, %s (%d kills, %d of the broker): %v; delivered %d of %d, overspend %.3f%%", run.Seed, g.Delivery, g.Kills, run.BrokerKills, tl, tl.Passes, target, 100*over)
	if len(tl.Lost) > 0 {
		t.Errorf("%s: %d input ids in no output topic, e.g. %v", g.Delivery, len(tl.Lost), tl.Lost[:min(5, len(tl.Lost))])
	}
	if tl.Unknown > 0 {
		t.Errorf("%s: %d output records of no input id", g.Delivery, tl.Unknown)
	}
	if tl.ByTopic[g.Name+".dead-letter"] == 0 || tl.ByTopic[g.Name+".exp-a"] == 0 || tl.ByTopic[g.Name+".rejected"] == 0 {
		t.Errorf("%s: the run did not exercise every destination: %v", g.Delivery, tl.ByTopic)
	}
	if g.Delivery != "exactly-once" {
		CheckKillDuplicates(t, inputs, outs, g.Snaps, g.LostSessions())
		return
	}
	if tl.Duplicates > 0 {
		t.Errorf("exactly-once: %d duplicate outputs", tl.Duplicates)
	}
	if over > 0.005 && run.BrokerKills == 0 { // with broker kills the bound is TestBrokerRestart's
		t.Errorf("exactly-once: %d passes for a target of %d, overspent by %.3f%% (bar 0.5%%)", tl.Passes, target, 100*over)
	}
	inStats, inLedgers := CountedPasses(ctx, t, addr, g.Name+".stats", g.Input, int32(run.Partitions), "campaign")
	t.Logf("exactly-once: passes in the stats topic %d, in the ledgers %d, in the output topics %d", inStats, inLedgers, tl.Passes)
	if inStats != uint64(tl.Passes) || inLedgers != uint64(tl.Passes) {
		t.Errorf("exactly-once: counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", inStats, inLedgers, tl.Passes)
		opts := []kgo.Opt{kgo.SeedBrokers(kafkabroker.Seeds(addr)...)}
		ledgers := LoadLedgers(ctx, t, opts, g.Name+".stats", g.Input, int32(run.Partitions))
		out := PassesBySource(inputs, outs, "id", "campaign")
		ends := map[int32]int64{}
		for _, r := range inputs {
			ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
		}
		for p := range int32(run.Partitions) {
			src := stats.SourceName(g.Input, p)
			st := ledgers[src]
			var counted uint64
			if r, ok := st.Report("campaign"); ok {
				counted = r.Total.Passed
			}
			if counted != uint64(out[p]) {
				t.Logf("exactly-once: source %s: ledger %d passes (sequence %d, next offset %d of %d, at %s, problems %v), outputs %d; its owners started from:\n%s",
					src, counted, st.Seq, st.Offset, ends[p], st.At.Format("15:04:05.000"), st.Problems, out[p], g.restores(src))
			}
		}
	}
}

// restores returns the lines in which the group's workers logged the
// ledger they started source from, each after its worker's name.
func (g *CrashGroup) restores(source string) string {
	var b strings.Builder
	for _, p := range g.Procs {
		p.Err.Mu.Lock()
		for _, l := range p.Err.All {
			if strings.Contains(l, "partition started from its ledger") && strings.Contains(l, `"source":"`+source+`"`) {
				fmt.Fprintf(&b, "\t%s: %s\n", p.Name, l)
			}
		}
		p.Err.Mu.Unlock()
	}
	return b.String()
}

// PassesBySource counts the passes of budget in the outputs by the input
// partition of their event (matched by the JSON field idPath).
func PassesBySource(inputs []*kgo.Record, outputs map[string][]*kgo.Record, idPath, budget string) map[int32]int {
	part := make(map[string]int32, len(inputs))
	for _, r := range inputs {
		part[JsonField(r.Value, idPath)] = r.Partition
	}
	n := map[int32]int{}
	for _, rs := range outputs {
		for _, r := range rs {
			if p, ok := part[JsonField(r.Value, idPath)]; ok && passOf(r, budget) {
				n[p]++
			}
		}
	}
	return n
}

// Admin returns an admin client of the broker at addr.
func Admin(t *testing.T, addr string) (*kadm.Client, func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addr)...))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), cl.Close
}

// CaughtUp reports whether group has committed offsets at the end of every
// partition of topic.
func CaughtUp(ctx context.Context, adm *kadm.Client, group, topic string) bool {
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

// Stall describes, for a test whose group did not catch up, where each
// input partition's group offset stands against its end, and which
// partitions of the outputs and of the group's stats topic (whose ledgers
// a partition assigned reads up to the last stable offset) hold an open
// transaction (last stable offset below the high watermark): what tells a
// slow group from a stuck one.
func Stall(ctx context.Context, adm *kadm.Client, group, input string, outputs ...string) string {
	outputs = append(outputs[:len(outputs):len(outputs)], group+".stats")
	var b strings.Builder
	ends, err := adm.ListEndOffsets(ctx, input)
	committed, err2 := adm.FetchOffsets(ctx, group)
	if err != nil || err2 != nil {
		return fmt.Sprintf("offsets of %s: %v, %v", input, err, err2)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if c, found := committed.Lookup(o.Topic, o.Partition); !found || c.At < o.Offset {
			fmt.Fprintf(&b, "%s/%d: group at %d of %d; ", o.Topic, o.Partition, c.At, o.Offset)
		}
	})
	hwm, err := adm.ListEndOffsets(ctx, outputs...)
	lso, err2 := adm.ListCommittedOffsets(ctx, outputs...)
	if err != nil || err2 != nil {
		return b.String() + fmt.Sprintf("offsets of the outputs: %v, %v", err, err2)
	}
	hwm.Each(func(o kadm.ListedOffset) {
		if l, found := lso.Lookup(o.Topic, o.Partition); found && l.Offset < o.Offset {
			fmt.Fprintf(&b, "%s/%d: open transaction (stable %d, end %d); ", o.Topic, o.Partition, l.Offset, o.Offset)
		}
	})
	return b.String()
}

// GroupConfig writes the config of the workers of group, reading input
// on a broker of kind k: one budget, "campaign", of target passes between
// begin and end; an experiment layer routing 40% of users to two topics;
// rejected and dead-letter topics; short group and transaction timeouts.
func GroupConfig(t *testing.T, k BrokerKind, addr, group, input, delivery string, partitions, target int, begin, end time.Time) string {
	t.Helper()
	return WriteFile(t, group+".yaml", fmt.Sprintf(`brokers: [%s]
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
`, addr, group, delivery, partitions, target, begin.Format(time.RFC3339), end.Format(time.RFC3339), input, k.GroupYAML(FastTimeouts)))
}

// GroupTopics returns the topics the workers of groupConfig write events
// to.
func GroupTopics(group string) []string {
	return []string{group + ".passed", group + ".exp-a", group + ".exp-b", group + ".rejected", group + ".dead-letter"}
}
