package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/controlfeed"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
)

// TestControlTopic changes budgets on two running workers through the
// control topic, as throttler budget set/delete do, and checks that each
// change reaches both workers (their flow trees, then their decisions)
// without a restart. It logs how long after the brokers acknowledged a
// record each worker had applied it.
func TestControlTopic(t *testing.T) {
	env := newTestEnv(t)
	const syncInterval = time.Second
	topics := Topics{
		Input: []string{"events"}, Rewards: []string{"clicks"},
		Output: "out", Rejected: "rejected", DeadLetter: "dlq",
		Stats: "stats", Control: "ctl",
	}
	follow := OnStart(func(ctx context.Context, w *Worker) (func(), error) {
		return controlfeed.Start(ctx, "ctl", w.ClientOpts(), w, w.Registerer(), w.Logger())
	})
	ws := []*runningWorker{
		env.startWorker(t, "w1", WithTopics(topics), SyncInterval(syncInterval), follow),
		env.startWorker(t, "w2", WithTopics(topics), SyncInterval(syncInterval), follow),
	}
	for _, w := range ws {
		waitReady(t, w.w)
	}
	waitOwned(t, ws)

	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// write produces a control record, waits for its acknowledgement and
	// returns when it began.
	write := func(key, val []byte) time.Time {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ctl", Key: key, Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return sent
	}
	// applied waits until cond holds on every worker and logs the delay
	// from the start of the write.
	applied := func(what string, sent time.Time, cond func(*Worker) bool) {
		t.Helper()
		var wg sync.WaitGroup
		delays := make([]time.Duration, len(ws))
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A fine tick: the test logs how soon each worker applied it.
				if !testwait.Poll(testwait.Patience, time.Millisecond, func() bool { return cond(w.w) }) {
					delays[i] = -1
					return
				}
				delays[i] = time.Since(sent)
			}()
		}
		wg.Wait()
		for i, d := range delays {
			if d < 0 {
				t.Fatalf("%s: worker %d did not apply it in %v", what, i+1, waitLong)
			}
		}
		t.Logf("%s: applied by the workers %v and %v after the write began (sync interval %v)", what, delays[0], delays[1], syncInterval)
	}

	// Add a budget the workers' config does not have.
	k, v, err := control.EncodeSet(config.Budget{Name: "c", Target: 1e6, Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	applied("add c", write(k, v), func(w *Worker) bool { return hasBudget(w.tree, "c") })

	// Change one of theirs: the controller keeps its counters.
	a := w1Budget(ws[0].w, "a")
	a.Target = 7777
	k, v, err = control.EncodeSet(a)
	if err != nil {
		t.Fatal(err)
	}
	applied("change a's target", write(k, v), func(w *Worker) bool { b, _ := w.tree.Budget("a"); return b.Target == 7777 })
	// Its new definition reaches the stats topic (what throttler status
	// reads) at the next sync.
	applied("a's new definition in the stats view (timed from the trees' change)", time.Now(), func(w *Worker) bool {
		b, _ := w.tree.Budget("a")
		return b.Target == 7777 && w.view.ShowsBudget(b)
	})

	// Events naming c are decided (none is a dead letter) on both workers.
	var recs []*kgo.Record
	for i := range 240 {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % inputPartitions), Key: []byte(fmt.Sprintf("u%d", i)),
			Value: []byte(fmt.Sprintf(`{"id":%d,"budget":"c","user":"u%d","score":1}`, i, i))})
	}
	env.produce(recs)
	env.waitCommitted("events")
	got := env.readAll("out", "out-red", "out-blue", "rejected", "dlq")
	passed := len(got["out"]) + len(got["out-red"]) + len(got["out-blue"])
	if passed == 0 || passed+len(got["rejected"]) != 240 || len(got["dlq"]) != 0 {
		t.Fatalf("events of the added budget: %d passed, %d rejected, %d dead letters; want 240 decided, none dead",
			passed, len(got["rejected"]), len(got["dlq"]))
	}
	for i, w := range ws {
		if offered, _ := gauge(t, w.w.Gatherer(), "throttler_offered_total", map[string]string{"budget": "c"}); offered == 0 {
			t.Fatalf("worker %d decided no event of c", i+1)
		}
	}

	// A bad record is counted and changes nothing.
	applied("bad record counted", write([]byte("c"), []byte(`{"version":1,"name":"c","target":-5,"period":"1h"}`)), func(w *Worker) bool {
		return controlRecords(t, w, "invalid") == 1
	})
	for _, w := range ws {
		if c, ok := w.w.tree.Budget("c"); !ok || c.Target != 1e6 {
			t.Fatal("a bad record changed budget c")
		}
	}

	// Delete c: its events go to the dead-letter topic as unknown budget.
	k, v, err = control.EncodeDelete("c")
	if err != nil {
		t.Fatal(err)
	}
	applied("delete c", write(k, v), func(w *Worker) bool { return !hasBudget(w.tree, "c") })
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Partition: int32(i % inputPartitions), Key: recs[i].Key, Value: recs[i].Value}
	}
	env.produce(recs)
	env.waitCommitted("events")
	dead := env.readAll("dlq")["dlq"]
	if len(dead) != 240 {
		t.Fatalf("events of the deleted budget: %d dead letters, want 240", len(dead))
	}
	for _, r := range dead {
		if h := recordHeader(r, pipeline.HeaderError); !strings.Contains(h, string(decode.ReasonUnknownBudget)) {
			t.Fatalf("dead letter with error %q, want %s", h, decode.ReasonUnknownBudget)
		}
	}
	for _, w := range ws {
		if n := controlRecords(t, w.w, "applied"); n != 3 {
			t.Fatalf("applied records %v, want 3", n)
		}
	}
	// c leaves the partitions' ledgers (at the next sync), and so the
	// stats view.
	testwait.Eventually(t, "c to leave the ledgers", func() bool {
		for _, st := range env.ledgers() {
			if _, ok := st.Report("c"); ok {
				return false
			}
		}
		_, inView := ws[0].w.view.Totals("c")
		return !inView
	})

	// A worker started now reads the topic from its start: the same
	// budgets as the others, although its config is theirs.
	w3 := env.startWorker(t, "w3", WithTopics(topics), SyncInterval(syncInterval), follow)
	waitReady(t, w3.w)
	if a, ok := w3.w.tree.Budget("a"); hasBudget(w3.w.tree, "c") || !ok || a.Target != 7777 {
		t.Fatalf("a new worker's budgets: %+v", w3.w.tree.Budgets())
	}
}

// w1Budget returns a worker's budget name as a config budget.
func w1Budget(w *Worker, name string) config.Budget {
	b, _ := w.tree.Budget(name)
	return config.Budget{Name: b.Name, Target: b.Target, Begin: b.Begin, End: b.End, Reserve: b.Reserve, Period: b.Period, Kind: config.KindPasses, Scored: b.Scored, Parent: b.Parent}
}

func hasBudget(tree *flow.Tree, name string) bool {
	_, ok := tree.Budget(name)
	return ok
}

// waitOwned waits until every worker owns input partitions.
func waitOwned(t *testing.T, ws []*runningWorker) {
	t.Helper()
	testwait.Eventually(t, "the workers to share the input", func() bool {
		for _, w := range ws {
			if ownedInputs(w.w) == 0 {
				return false
			}
		}
		return true
	})
}

func recordHeader(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// controlRecords returns the worker's count of control records of result.
func controlRecords(t *testing.T, w *Worker, result string) float64 {
	v, _ := gauge(t, w.Gatherer(), "throttler_control_records_total", map[string]string{"result": result})
	return v
}
