package integration

import (
	"context"
	"errors"
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
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// outageFor is how long the registry is down: 30s, or
// THROTTLER_OUTAGE (a Go duration) for a quicker run.
func outageFor(t *testing.T) time.Duration {
	if s := os.Getenv("THROTTLER_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("THROTTLER_OUTAGE: %v", err)
		}
		return d
	}
	return 30 * time.Second
}

// TestRegistryOutage stops the schema registry for 30s while a worker
// consumes Avro events: events of a schema it has fetched keep flowing;
// events of a schema it has not (registered just before the outage) are
// held, their partitions paused, never dead-lettered, and the worker says
// so (Ready, hence /readyz; metrics); once the registry is back, every
// one of them is delivered, exactly once, within 5s.
func TestRegistryOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30s registry outage")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, srv := startBrokerAndRegistry(ctx, t, broker.Partitions(3), broker.SeedTopics("events"))
	cached, fresh := outageEncoders(ctx, t, srv)

	w := startOutageWorker(ctx, t, b.Addrs(), srv.URL())
	addr := strings.Join(b.Addrs(), ",")
	early := followOutput(ctx, t, addr, "passed", "early")
	late := followOutput(ctx, t, addr, "passed", "late")
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(enc loadgen.Encoder, budget string, n int) {
		g, err := loadgen.New(loadgen.Config{Seed: uint64(time.Now().UnixNano()), Users: 50, Budgets: []loadgen.Budget{{Name: budget, Weight: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			e := g.Next(time.Now())
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "events", Key: []byte(e.User), Value: enc.Append(nil, &e)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const n = 300
	produce(cached, "early", n)
	testwait.Eventually(t, "the first events delivered", func() bool { return early.total() == n })

	srv.Stop()
	down := time.Now()
	produce(cached, "early", n) // flow: their schema is fetched
	produce(fresh, "late", n)   // held: a schema the worker has not fetched
	// (Events after a held one on its partition wait with it: order.)
	// The whole outage: nothing dead-lettered, nothing of the new schema
	// out, the worker unready; the fetched schema's events delivered.
	for time.Since(down) < outageFor(t) {
		if d := deadLetters(ctx, t, b.Addrs()); d != 0 || late.total() != 0 {
			t.Fatalf("%v into the outage: %d dead letters, %d events of the new schema delivered", time.Since(down), d, late.total())
		}
		time.Sleep(200 * time.Millisecond) // the outage's own length, not a synchronisation
	}
	if err := w.Ready(); !errors.Is(err, schemaregistry.ErrUnreachable) || early.total() != 2*n {
		t.Fatalf("after the outage: Ready %v, %d of %d events of the fetched schema delivered", err, early.total(), 2*n)
	}
	if up, waits := gauge(t, w, "throttler_schema_registry_up"), gauge(t, w, "throttler_schema_waits_total"); up != 0 || waits == 0 {
		t.Errorf("metrics during the outage: up %v, waits %v", up, waits)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	testwait.Eventually(t, "the held events delivered", func() bool { return late.total() >= n })
	resumed := time.Since(back)
	if first := firstAfter(late, back); first.Sub(back) > 5*time.Second || resumed > 5*time.Second {
		t.Errorf("delivery resumed %v after the registry's return, all delivered after %v; want within 5s", first.Sub(back), resumed)
	}
	t.Logf("outage %v: %d events held; delivery resumed %v after the registry came back, all delivered after %v",
		outageFor(t), n, firstAfter(late, back).Sub(back).Round(time.Millisecond), resumed.Round(time.Millisecond))
	testwait.Eventually(t, "the worker ready again", func() bool { return w.Ready() == nil })
	if late.total() != n || early.total() != 2*n || deadLetters(ctx, t, b.Addrs()) != 0 {
		t.Errorf("delivered %d and %d of %d each, %d dead letters", late.total(), early.total(), n, deadLetters(ctx, t, b.Addrs()))
	}
}

// outageEncoders registers the events' Avro schema and a second version
// of it (same fields, another id) and returns their encoders.
func outageEncoders(ctx context.Context, t *testing.T, srv *schemaregistry.Server) (cached, fresh loadgen.Encoder) {
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

// startOutageWorker runs a worker of Avro events passing everything;
// it stops with the test.
func startOutageWorker(ctx context.Context, t *testing.T, brokers []string, registryURL string) *consumer.Worker {
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
	w, _, stop := runWorker(ctx, t, cfg, zerolog.InfoLevel)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	testwait.Eventually(t, "the worker ready", func() bool { return w.Ready() == nil })
	return w
}

// deadLetters returns how many records the outage worker dead-lettered.
func deadLetters(ctx context.Context, t *testing.T, brokers []string) int64 {
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

// firstAfter returns when c first counted more than it had at t.
func firstAfter(c *outputCounter, t time.Time) time.Time {
	base := c.at(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.samples {
		if s.at.After(t) && s.n > base {
			return s.at
		}
	}
	return time.Time{}
}

// gauge returns the value of a worker's metric (a gauge or a counter
// without labels).
func gauge(t *testing.T, w *consumer.Worker, name string) float64 {
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
