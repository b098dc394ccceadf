package consumer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestThroughput compares the worker with a raw franz-go consume→produce
// passthrough on the same in-process broker. It only logs rates (speed is
// never asserted) and runs when THROTTLER_THROUGHPUT is set to a record
// count, e.g. THROTTLER_THROUGHPUT=200000.
func TestThroughput(t *testing.T) {
	var n int
	if _, err := fmt.Sscan(os.Getenv("THROTTLER_THROUGHPUT"), &n); err != nil || n <= 0 {
		t.Skip("set THROTTLER_THROUGHPUT=<records> to run")
	}
	env := newTestEnv(t)
	pad := strings.Repeat("x", 120)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("u%d", i%5000)),
			Value: []byte(fmt.Sprintf(`{"id":%d,"budget":"a","user":"u%d","score":%d,"pad":"%s"}`, i, i%5000, i%10, pad))}
	}
	env.produce(recs)

	// raw passthrough, at-least-once; timed from the first poll
	start := time.Now()
	n0 := 0
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...), kgo.ConsumerGroup("raw"), kgo.ConsumeTopics("events"),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seen := 0
	first := true
	for seen < n {
		if first && seen > 0 {
			first, start = false, time.Now()
			n0 = seen
		}
		fs := cl.PollRecords(ctx, DefaultMaxPollRecords)
		fs.EachRecord(func(r *kgo.Record) {
			cl.Produce(ctx, &kgo.Record{Topic: "out", Key: r.Key, Value: r.Value, Headers: r.Headers}, nil)
			seen++
		})
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	raw := float64(n-n0) / time.Since(start).Seconds()
	t.Logf("raw passthrough at-least-once: %.0f rec/s", raw)

	modes := []Delivery{AtLeastOnce, ExactlyOnce}
	if os.Getenv("THROTTLER_THROUGHPUT_EOS_ONLY") != "" {
		modes = modes[1:]
	}
	for _, d := range modes {
		group := "g"
		extra := []Opt{WithDelivery(d), Group(group), SyncInterval(time.Second)}
		w := env.startWorker(t, d.String(), extra...)
		start, c0 := env.waitFirstCommit(group, "events")
		env.waitCommittedGroup(group, "events")
		rate := float64(int64(n)-c0) / time.Since(start).Seconds()
		w.stop(t)
		t.Logf("worker %s: %.0f rec/s (%.2f× raw)", d, rate, rate/raw)
		mfs, _ := w.w.Gatherer().Gather()
		for _, mf := range mfs {
			if mf.GetName() == "throttler_commit_seconds" {
				for _, m := range mf.GetMetric() {
					h := m.GetHistogram()
					t.Logf("  commit %s: n=%d sum=%.3fs", m.GetLabel()[0].GetValue(), h.GetSampleCount(), h.GetSampleSum())
				}
			}
		}
		// the next worker must not find the group's offsets at the end
		env.deleteGroup(group)
	}
}

// waitFirstCommit waits for the group's first commit on topic and returns
// when it saw it and how many records it covered.
func (env *testEnv) waitFirstCommit(group, topic string) (time.Time, int64) {
	var sum int64
	// A fine tick: the test times from the first commit.
	testwait.EventuallyEvery(env.t, testwait.Patience, 5*time.Millisecond, "the group's first commit", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		committed, err := env.adm.FetchOffsets(ctx, group)
		cancel()
		if err != nil {
			return false
		}
		sum = 0
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.At > 0 {
				sum += o.At
			}
		})
		return sum > 0
	})
	return time.Now(), sum
}
