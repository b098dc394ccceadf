package suite

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// OutageFor is how long the registry is down: 30s, or
// THROTTLER_OUTAGE (a Go duration) for a quicker run.
func OutageFor(t *testing.T) time.Duration {
	if s := os.Getenv("THROTTLER_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("THROTTLER_OUTAGE: %v", err)
		}
		return d
	}
	return 30 * time.Second
}

// OutageEncoders registers the events' Avro schema and a second version
// of it (same fields, another id) and returns their encoders.
func OutageEncoders(ctx context.Context, t *testing.T, srv *schemaregistry.Server) (cached, fresh loadgen.Encoder) {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if cached, err = loadgen.Register(ctx, cl, "events-value", loadgen.FormatAvro); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(loadgen.AvroSchema, `"name":"Event"`, `"name":"Event","doc":"v2"`, 1)
	ss, err := cl.CreateSchema(ctx, "events-v2-value", sr.Schema{Schema: v2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	if fresh, err = loadgen.NewEncoder(loadgen.FormatAvro, ss.ID); err != nil {
		t.Fatal(err)
	}
	return cached, fresh
}

// StartOutageWorker runs a worker of Avro events passing everything;
// it stops with the test.
func StartOutageWorker(ctx context.Context, t *testing.T, brokers []string, registryURL string) *consumer.Worker {
	t.Helper()
	now := time.Now()
	cfg, err := config.Parse(fmt.Appendf(nil, `brokers: [%s]
group: outage
topics: {input: [events], output: passed, partitions: 3}
fields: {budget: campaign, key: user, id: id, time: ts}
format: {input: avro}
schema_registry: {urls: [%q]}
budgets:
  - {name: early, target: 1e9, begin: %s, end: %s}
  - {name: late, target: 1e9, begin: %s, end: %s}
http: {listen: "127.0.0.1:0"}
`, strings.Join(brokers, ","), registryURL, now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339),
		now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)))
	if err != nil {
		t.Fatal(err)
	}
	w, _, stop := RunWorker(ctx, t, cfg, zerolog.InfoLevel)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	testwait.Eventually(t, "the worker ready", func() bool { return w.Ready() == nil })
	return w
}

// DeadLetters returns how many records the outage worker dead-lettered.
func DeadLetters(ctx context.Context, t *testing.T, brokers []string) int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "outage.dead-letter")
	if err != nil {
		return 0 // not created: none
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += max(o.Offset, 0) })
	return n
}

// FirstAfter returns when c first counted more than it had at t.
func FirstAfter(c *OutputCounter, t time.Time) time.Time {
	base := c.At(t)
	c.Mu.Lock()
	defer c.Mu.Unlock()
	for _, s := range c.Samples {
		if s.At.After(t) && s.N > base {
			return s.At
		}
	}
	return time.Time{}
}

// Gauge returns the value of a worker's metric (a gauge or a counter
// without labels).
func Gauge(t *testing.T, w *consumer.Worker, name string) float64 {
	t.Helper()
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
