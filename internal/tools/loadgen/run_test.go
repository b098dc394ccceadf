package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/twmb/franz-go/pkg/kgo"
)

const testTimeout = 2 * time.Minute

// TestRunAgainstEmbeddedBroker produces 1,000 events to an in-process
// broker and reads them back: all there, ids unique, keys = users.
func TestRunAgainstEmbeddedBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Partitions(4), broker.SeedTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	g := mustNew(t, Config{Seed: 9, Users: 50, Budgets: abc()})
	const n = 1000
	sum, err := Run(ctx, prod, g, RunConfig{Topic: "events", Rate: 20_000, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Produced != n || sum.Seconds <= 0 || sum.Rate <= 0 {
		t.Fatalf("summary %+v, want %d produced", sum, n)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ids := make(map[string]bool)
	partitions := make(map[int32]bool)
	for len(ids) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d events before the deadline", len(ids), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var e struct{ ID, User, Campaign string }
			if err := json.Unmarshal(r.Value, &e); err != nil {
				t.Fatalf("record %s: %v", r.Value, err)
			}
			if ids[e.ID] {
				t.Fatalf("duplicate id %s", e.ID)
			}
			ids[e.ID] = true
			if string(r.Key) != e.User {
				t.Fatalf("key %q, user %q", r.Key, e.User)
			}
			partitions[r.Partition] = true
		})
	}
	if len(ids) != n {
		t.Fatalf("read %d events, want %d", len(ids), n)
	}
	if len(partitions) < 2 {
		t.Errorf("all events on partitions %v; keys should spread them", partitions)
	}
}

// TestRunStopsAfterDuration checks that a paced run with a duration stops,
// and tops up to rate x duration, without asserting any speed.
func TestRunStopsAfterDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.SeedTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sum, err := Run(ctx, cl, mustNew(t, Config{Seed: 1, Budgets: abc()}),
		RunConfig{Topic: "events", Rate: 500, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Produced != 150 {
		t.Fatalf("produced %d, want 500/s x 0.3s = 150", sum.Produced)
	}
}

func TestRunErrors(t *testing.T) {
	g := mustNew(t, Config{Budgets: abc()})
	for _, rc := range []RunConfig{{}, {Topic: "t", Rate: -1}, {Topic: "t", Duration: -time.Second}} {
		if _, err := Run(context.Background(), nil, g, rc); !errors.Is(err, ErrRun) {
			t.Errorf("Run(%+v) = %v, want ErrRun", rc, err)
		}
	}
}
