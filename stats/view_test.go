package stats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// worker simulates one node: the reports of the sources it owns, advanced
// by round, which it writes as a whole ledger per source.
type worker struct {
	sources []string
	budgets []string
}

// records returns one ledger snapshot per source of w at round: its
// reports, at sequence round.
func (w worker) records(t testing.TB, topic string, round uint64) []*kgo.Record {
	bySource := map[string][]flow.Report{}
	for _, r := range w.reports(round) {
		bySource[r.Source] = append(bySource[r.Source], r)
	}
	var out []*kgo.Record
	for _, src := range w.sources {
		out = append(out, snapshotRecord(t, topic, src, round, roundAt(round), bySource[src]))
	}
	return out
}

func roundAt(round uint64) time.Time { return t0.Add(time.Duration(round) * time.Second) }

func (w worker) reports(round uint64) []flow.Report {
	var out []flow.Report
	for _, b := range w.budgets {
		for i, s := range w.sources {
			n := round*100 + uint64(i)
			out = append(out, flow.Report{
				Budget:   b,
				Source:   s,
				At:       roundAt(round),
				Since:    t1,
				Total:    flow.Counters{Offered: n, Passed: n / 2, Rewards: float64(n) / 10},
				Period:   int64(round),
				InPeriod: flow.Counters{Offered: round},
			})
		}
	}
	return out
}

func newView(t testing.TB, conn []kgo.Opt, topic string, opts ...ViewOpt) *View {
	t.Helper()
	v, err := NewView(testCtx(t), topic, conn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// expect returns the newest report per budget x source of the given rounds.
func expect(rounds map[*worker]uint64) map[string]map[string]flow.Report {
	out := map[string]map[string]flow.Report{}
	for w, round := range rounds {
		for _, r := range w.reports(round) {
			if out[r.Budget] == nil {
				out[r.Budget] = map[string]flow.Report{}
			}
			out[r.Budget][r.Source] = r
		}
	}
	return out
}

// viewMatches reports whether v holds exactly want.
func viewMatches(v *View, want map[string]map[string]flow.Report) error {
	if got := v.Budgets(); len(got) != len(want) {
		return fmt.Errorf("budgets %v, want %d", got, len(want))
	}
	for b, bySource := range want {
		got := v.View(b, nil)
		if len(got) != len(bySource) {
			return fmt.Errorf("budget %q: %d sources, want %d", b, len(got), len(bySource))
		}
		for i, r := range got {
			if i > 0 && got[i-1].Source >= r.Source {
				return fmt.Errorf("budget %q: sources not sorted", b)
			}
			if !sameReport(r, bySource[r.Source]) {
				return fmt.Errorf("budget %q source %q: got %+v, want %+v", b, r.Source, r, bySource[r.Source])
			}
		}
	}
	return nil
}

// TestViewTwoWorkers publishes from two workers and checks that a third
// node's View, started midway, catches up and follows to the newest values,
// and that a View started later (a restarted worker) has the cluster totals
// as soon as it is caught up, also after compaction.
func TestViewTwoWorkers(t *testing.T) {
	cluster, conn := newCluster(t)
	const topic = "stats"
	ensure(t, conn, StatsTopic(topic, 3))
	a := &worker{sources: []string{"events/0", "events/1"}, budgets: []string{"all", "campaign/x"}}
	b := &worker{sources: []string{"events/2"}, budgets: []string{"all", "campaign/x", "campaign/y"}}
	ca, cb := newClient(t, conn), newClient(t, conn)
	publish := func(cl *kgo.Client, w *worker, round uint64) {
		t.Helper()
		produceSync(t, cl, w.records(t, topic, round)...)
	}

	for round := uint64(1); round <= 3; round++ {
		publish(ca, a, round)
		publish(cb, b, round)
	}
	c := newView(t, conn, topic)
	if err := c.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Everything acknowledged before the View started is in it once caught up.
	if err := viewMatches(c, expect(map[*worker]uint64{a: 3, b: 3})); err != nil {
		t.Fatalf("after catching up: %v", err)
	}

	for round := uint64(4); round <= 6; round++ {
		publish(ca, a, round)
	}
	publish(cb, b, 4)
	want := expect(map[*worker]uint64{a: 6, b: 4})
	waitFor(t, "the view to follow new reports", func() bool { return viewMatches(c, want) == nil })

	st := c.Stats()
	if st.Budgets != 3 || st.Sources != 7 || st.Skipped != 0 || st.Deleted != 0 || st.LastError != nil {
		t.Fatalf("stats = %+v", st)
	}
	if r, ok := c.Report("campaign/y", "events/2"); !ok || r.Period != 4 {
		t.Fatalf("Report = %+v, %v", r, ok)
	}
	if _, ok := c.Report("campaign/y", "events/0"); ok {
		t.Fatal("Report found a source the budget does not have")
	}

	// A restarted worker: a new View over the compacted topic.
	cluster.Compact()
	restarted := newView(t, conn, topic)
	if err := restarted.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := viewMatches(restarted, want); err != nil {
		t.Fatalf("restarted view: %v", err)
	}

	// A budget dropped from a source's ledger leaves the source; leaving
	// the last source of a budget removes the budget. A tombstone of an
	// obsolete ledger key changes nothing but the count of deletions.
	drop := ledgerRecord(t, topic, LedgerRecord{Source: "events/2", Part: LedgerDelta, Seq: 5, At: roundAt(4), Offset: 5,
		DroppedBudgets: []string{"campaign/y"}})
	obsolete, _ := LedgerKey("events/2", LedgerDelta, 9)
	produceSync(t, cb, drop, &kgo.Record{Topic: topic, Key: obsolete})
	delete(want, "campaign/y")
	waitFor(t, "the drop", func() bool { return viewMatches(c, want) == nil && viewMatches(restarted, want) == nil })
	waitFor(t, "the tombstone", func() bool { return c.Stats().Deleted == 1 })
	if err := viewMatches(c, want); err != nil {
		t.Fatalf("after the tombstone: %v", err)
	}
}

// TestViewTransactions publishes stats inside transactions: aborted reports
// are never seen, a partition ending in an abort marker still counts as read,
// and a transaction open when the View starts holds CaughtUp back until it
// ends.
func TestViewTransactions(t *testing.T) {
	_, conn := newCluster(t)
	const topic = "stats"
	ensure(t, conn, StatsTopic(topic, 1))
	w := newClient(t, conn, kgo.TransactionalID("worker-1"))
	report := func(passed uint64) []*kgo.Record {
		return []*kgo.Record{snapshotRecord(t, topic, "events/0", passed, t0, []flow.Report{{Budget: "all", Total: flow.Counters{Passed: passed}}})}
	}
	passed := func(v *View) uint64 {
		r, _ := v.Report("all", "events/0")
		return r.Total.Passed
	}

	txn(t, w, true, report(1)...)
	txn(t, w, false, report(2)...) // the log now ends in an abort marker
	v := newView(t, conn, topic)
	if err := v.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := passed(v); got != 1 {
		t.Fatalf("passed = %d, want 1 (aborted report visible?)", got)
	}

	if err := w.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, w, report(3)...)
	open := newView(t, conn, topic)
	// Once the view has applied everything committed before the open
	// transaction, only that transaction stands between it and the end.
	waitFor(t, "the view to apply the committed report", func() bool { return passed(open) == 1 })
	if open.CaughtUp() {
		t.Fatal("caught up while a transaction that started before the view is open")
	}
	if err := w.EndTransaction(testCtx(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := open.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := passed(open); got != 3 {
		t.Fatalf("passed = %d, want 3", got)
	}
	waitFor(t, "the first view to see the commit", func() bool { return passed(v) == 3 })
}

func TestViewEmptyTopicIsCaughtUp(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 2))
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := newView(t, conn, "stats", WithClock(clock))
	if !v.CaughtUp() {
		t.Fatal("a view of an empty topic is not caught up")
	}
	if got := v.View("all", nil); len(got) != 0 {
		t.Fatalf("View = %v", got)
	}
	mu.Lock()
	now = t0.Add(3 * time.Second)
	mu.Unlock()
	if age := v.Age(); age != 3*time.Second {
		t.Fatalf("Age = %v, want 3s since creation", age)
	}

	// Age restarts at the newest applied record.
	produceSync(t, newClient(t, conn), snapshotRecord(t, "stats", "events/0", 1, t0, []flow.Report{{Budget: "b", Total: flow.Counters{Offered: 1}}}))
	waitFor(t, "the report", func() bool { return len(v.View("b", nil)) == 1 })
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if age := v.Age(); age != 2*time.Second {
		t.Fatalf("Age = %v, want 2s since the apply", age)
	}

	v.Close()
	v.Close() // idempotent
	if err := v.WaitCaughtUp(context.Background()); err != nil {
		t.Fatalf("WaitCaughtUp after Close of a caught-up view = %v", err)
	}
	if len(v.View("b", nil)) != 1 {
		t.Fatal("a closed view forgot what it had read")
	}
}

func TestViewSkipsUndecodable(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 1))
	good := snapshotRecord(t, "stats", "events/0", 1, t0, []flow.Report{{Budget: "b", Period: 9, Total: flow.Counters{Offered: 1}}})
	k, _ := LedgerKey("events/1", LedgerHeartbeat, 0)
	cl := newClient(t, conn)
	produceSync(t, cl,
		&kgo.Record{Topic: "stats", Key: []byte("not a key"), Value: []byte("x")},
		&kgo.Record{Topic: "stats", Key: k, Value: []byte{2, 0}}, // a future major version
		good,
	)
	v := newView(t, conn, "stats")
	if err := v.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := v.Stats()
	var re *RecordError
	if st.Skipped != 2 || st.Applied != 1 || !errors.As(st.LastError, &re) || !errors.Is(st.LastError, ErrUnknownVersion) || re.Offset != 1 {
		t.Fatalf("stats = %+v", st)
	}
	if r, ok := v.Report("b", "events/0"); !ok || r.Period != 9 {
		t.Fatalf("Report = %+v, %v", r, ok)
	}
}

func TestNewViewErrors(t *testing.T) {
	_, conn := newCluster(t)
	ctx := testCtx(t)
	if _, err := NewView(ctx, "missing", conn); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("missing topic: err = %v", err)
	}
	ensure(t, conn, StatsTopic("stats", 1))
	if _, err := NewView(ctx, "stats", append(conn, kgo.ConsumerGroup("g"))); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("group client: err = %v", err)
	}
	if _, err := NewView(ctx, "", conn); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty topic: err = %v", err)
	}
	if _, err := NewView(ctx, "stats", conn, WithClock(nil)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil clock: err = %v", err)
	}
}
