package consumer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
)

const (
	delayTarget = 200
	delayPeriod = 500 * time.Millisecond
)

func (env *testEnv) startDelayWorker(t *testing.T, name string, opts ...Opt) *runningWorker {
	t.Helper()
	tree, err := flow.NewTree([]flow.Budget{{Name: "d", Target: delayTarget, Period: delayPeriod, Delay: true}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder(decode.KeyPath("user"), decode.IDPath("id"))
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("worker", name).Logger()
	w, err := NewWorker(tree, dec, append([]Opt{
		ClientOpts(env.clientOpts()...),
		Group("gd"),
		WithTopics(Topics{Input: []string{"events"}, Output: "out", Rejected: "rejected", DeadLetter: "dlq",
			Stats: "dstats"}),
		SyncInterval(200 * time.Millisecond),
		WithLogger(log),
		HTTPListen("127.0.0.1:0"),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return runWorker(t, w)
}

// owned returns the input partitions a worker owns.
func owned(w *Worker) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.parts)
}

// arrivals follows a topic (read_committed) and notes when each record
// became visible.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (env *testEnv) follow(ctx context.Context, t *testing.T, topic string) *arrivals {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	a := &arrivals{}
	go func() {
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			a.mu.Lock()
			fs.EachRecord(func(*kgo.Record) { a.at = append(a.at, now) })
			a.mu.Unlock()
		}
	}()
	return a
}

// TestDelayBudget runs a backlog of events through two workers and a delay
// budget of 200 per 500 ms: every event ends in the output exactly once,
// none is rejected, the offsets committed are the ledgers' offsets,
// and by any instant the output holds no more than 200 per period begun
// since the backlog was written (records become visible after they are
// processed, so this bound holds however slow the machine). In the
// exactly-once run one worker stops mid-way, so a paused partition moves.
func TestDelayBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delivery Delivery
		stopOne  bool
	}{
		{"exactly-once", ExactlyOnce, true},
		{"at-least-once", AtLeastOnce, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t)
			w1 := env.startDelayWorker(t, "w1", WithDelivery(tc.delivery))
			w2 := env.startDelayWorker(t, "w2", WithDelivery(tc.delivery))
			waitReady(t, w1.w)
			waitReady(t, w2.w)
			testwait.Eventually(t, "the group to settle at half the partitions each", func() bool {
				return owned(w1.w) == inputPartitions/2 && owned(w2.w) == inputPartitions/2
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := env.follow(ctx, t, "out")

			const n = 2400
			var recs []*kgo.Record
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("u%d", i%97)),
					Value: []byte(fmt.Sprintf(`{"id":%d,"budget":"d","user":"u%d"}`, i, i%97))})
			}
			start := time.Now()
			env.produce(recs)
			if tc.stopOne {
				testwait.Eventually(t, "a third of the records out", func() bool {
					out.mu.Lock()
					defer out.mu.Unlock()
					return len(out.at) >= n/3
				})
				w2.stop(t)
			}
			env.waitCommittedGroup("gd", "events")
			w1.stop(t)
			w2.stop(t)

			got := env.readAll("out", "rejected", "dlq")
			if len(got["rejected"]) != 0 || len(got["dlq"]) != 0 {
				t.Fatalf("%d rejected, %d dead-lettered; want none", len(got["rejected"]), len(got["dlq"]))
			}
			seen := make([]int, n)
			for _, r := range got["out"] {
				if id := recordID(r); id >= 0 && id < n {
					seen[id]++
				}
			}
			for id, k := range seen {
				if k != 1 {
					t.Fatalf("event %d is in the output %d times", id, k)
				}
			}

			// the bound: arrivals by T ≤ target × periods begun in [start, T]
			p := int64(delayPeriod)
			first := start.UnixNano() / p
			out.mu.Lock()
			for i, at := range out.at {
				if begun := at.UnixNano()/p - first + 1; int64(i+1) > delayTarget*begun {
					t.Errorf("%d records out %v after the backlog was written: more than %d per period over %d periods",
						i+1, at.Sub(start), delayTarget, begun)
					break
				}
			}
			last := out.at[len(out.at)-1]
			out.mu.Unlock()
			t.Logf("%d events through in %v (%d periods of %v; at least %d needed)", n, last.Sub(start).Round(time.Millisecond),
				last.UnixNano()/p-first+1, delayPeriod, n/delayTarget)

			// the ledgers hold the committed offsets and count every pass
			committed, err := env.adm.FetchOffsets(ctx, "gd")
			if err != nil {
				t.Fatal(err)
			}
			var passed uint64
			for src, cp := range env.ledgersOf("dstats") {
				var id int32
				if _, err := fmt.Sscanf(src, "events/%d", &id); err != nil {
					continue
				}
				c, _ := committed.Lookup("events", id)
				if cp.Offset != c.At {
					t.Errorf("%s: ledger at offset %d, group committed %d", src, cp.Offset, c.At)
				}
				if r, ok := cp.Report("d"); ok {
					passed += r.Total.Passed
				}
			}
			if passed != n {
				t.Errorf("ledgers count %d passes, want %d", passed, n)
			}
			if pauses := counterSum(t, w1.w, "throttler_delays_total") + counterSum(t, w2.w, "throttler_delays_total"); pauses == 0 {
				t.Error("throttler_delays_total is 0: no partition was paused")
			}
		})
	}
}

func counterSum(t *testing.T, w *Worker, name string) float64 {
	t.Helper()
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestHoldBackOwnsBudget: the budget of a held partition is a copy, not
// the event's string over the record's bytes, which the pause's metric
// label would keep (and which change when the buffer is reused).
func TestHoldBackOwnsBudget(t *testing.T) {
	tree, err := flow.NewTree([]flow.Budget{{Name: "d", Target: 1, Period: time.Hour, Delay: true}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	src, err := tree.Open("in/0", now, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &partition{src: src}
	buf := []byte("d")
	var e pipeline.Event
	e.Reset(&kgo.Record{Topic: "in", Offset: 7, Value: buf}, now, "in/0")
	e.Fields.Budget = bytesconv.String(buf)
	p.holdBack(e.Record, &e)
	copy(buf, "x")
	if !p.hold.on || p.hold.budget != "d" || p.nextOffset != 7 {
		t.Fatalf("hold %+v, next offset %d after the record's bytes changed; want on, budget d, offset 7", p.hold, p.nextOffset)
	}
}
