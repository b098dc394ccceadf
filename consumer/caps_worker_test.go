package consumer

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// startCapWorker runs a worker of group "gcaps" with one generous budget
// and a cap of 2 per user per hour (burst 1).
func (env *testEnv) startCapWorker(t *testing.T, name string) *runningWorker {
	t.Helper()
	tree, err := flow.NewTree([]flow.Budget{{Name: "a", Target: 1e9, Period: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder(decode.KeyPath("user"), decode.IDPath("id"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(tree, dec,
		ClientOpts(env.clientOpts()...),
		Group("gcaps"),
		WithTopics(Topics{Input: []string{"events"}, Output: "out", Rejected: "rejected", DeadLetter: "dlq",
			Stats: "gcaps.stats"}),
		WithCaps("gcaps.caps", pipeline.CapSpec{Name: "per-user", Burst: 1, Count: 1, Period: time.Hour}),
		WithLogger(zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("worker", name).Logger()),
	)
	if err != nil {
		t.Fatal(err)
	}
	return runWorker(t, w)
}

// TestCapsSurviveRestart: a second worker of the group continues from the
// caps the first one committed to the changelog: no user passes more than
// its cap over both runs.
func TestCapsSurviveRestart(t *testing.T) {
	env := newTestEnv(t)
	const users, each = 40, 5
	batch := func(round int) []*kgo.Record {
		var recs []*kgo.Record
		for i := range each {
			for u := range users {
				v := fmt.Sprintf(`{"id":"%d-%d-%d","budget":"a","user":"u%d"}`, round, i, u, u)
				recs = append(recs, &kgo.Record{Topic: "events", Key: fmt.Appendf(nil, "u%d", u), Value: []byte(v)})
			}
		}
		return recs
	}
	env.produce(batch(1))
	w1 := env.startCapWorker(t, "w1")
	env.waitCommittedGroup("gcaps", "events")
	w1.stop(t)

	env.produce(batch(2))
	w2 := env.startCapWorker(t, "w2")
	env.waitCommittedGroup("gcaps", "events")
	misrouted := capMetric(t, w2.w, "throttler_cap_misrouted_total")
	w2.stop(t)

	got := env.readAll("out", "rejected", "gcaps.caps")
	passed := map[string]int{}
	for _, r := range got["out"] {
		passed[string(r.Key)]++
	}
	capped := 0
	for _, r := range got["rejected"] {
		if v, _ := pipeline.HeaderValue(r, pipeline.HeaderReason); v == pipeline.ReasonCap {
			capped++
		}
	}
	for u := range users {
		if n := passed[fmt.Sprint("u", u)]; n != 2 {
			t.Errorf("user u%d passed %d times, want 2 (limit 2 per hour over both runs)", u, n)
		}
	}
	if capped != users*(2*each-2) {
		t.Errorf("%d events capped, want %d", capped, users*(2*each-2))
	}
	if len(got["gcaps.caps"]) < users {
		t.Errorf("changelog holds %d records, want at least one per user (%d)", len(got["gcaps.caps"]), users)
	}
	for _, r := range got["gcaps.caps"] {
		src, capName, key, ok := stats.ParseCapKey(r.Key)
		if !ok || capName != "per-user" || src != stats.SourceName("events", r.Partition) || len(key) == 0 {
			t.Fatalf("changelog record key %q in partition %d", r.Key, r.Partition)
		}
	}
	if misrouted != 0 {
		t.Errorf("misrouted = %v for input keyed by user with the default partitioner", misrouted)
	}
}

// capMetric sums the samples of a counter or gauge of w.
func capMetric(t *testing.T, w *Worker, name string) float64 {
	t.Helper()
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
