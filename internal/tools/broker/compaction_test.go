package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionRuns checks that CompactionInterval makes the broker
// compact on its own: an overwritten key disappears without Compact.
func TestCompactionRuns(t *testing.T) {
	b := start(t, CompactionInterval(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	compact := "compact"
	if err := EnsureTopicsOpts(ctx, []kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, 1, map[string]*string{"cleanup.policy": &compact}, "state"); err != nil {
		t.Fatal(err)
	}
	cl := client(t, b)
	// Separate batches: the newest batch of a partition is never compacted.
	for _, kv := range [][2]string{{"k", "old"}, {"k", "new"}, {"other", "x"}} {
		r := &kgo.Record{Topic: "state", Key: []byte(kv[0]), Value: []byte(kv[1])}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var values []string
	for {
		values = readAll(ctx, t, b, adm, "state")
		if len(values) == 2 && values[0] == "new" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no compaction before the deadline: %q", values)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readAll returns the values of a one-partition topic from the start to
// the current end.
func readAll(ctx context.Context, t *testing.T, b *Broker, adm *kadm.Client, topic string) []string {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := ends[topic][0].Offset
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var values []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return values
		}
		var last int64 = -1
		fs.EachRecord(func(r *kgo.Record) {
			values = append(values, string(r.Value))
			last = r.Offset
		})
		if last+1 >= end {
			return values
		}
	}
}
