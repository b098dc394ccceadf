package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"

	. "github.com/throttler/throttler/integration/suite"
)

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
	b, srv := StartBrokerAndRegistry(ctx, t, broker.Partitions(3), broker.SeedTopics("events"))
	cached, fresh := OutageEncoders(ctx, t, srv)

	w := StartOutageWorker(ctx, t, b.Addrs(), srv.URL())
	addr := strings.Join(b.Addrs(), ",")
	early := FollowOutput(ctx, t, addr, "passed", "early")
	late := FollowOutput(ctx, t, addr, "passed", "late")
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
	testwait.Eventually(t, "the first events delivered", func() bool { return early.Total() == n })

	srv.Stop()
	down := time.Now()
	produce(cached, "early", n) // flow: their schema is fetched
	produce(fresh, "late", n)   // held: a schema the worker has not fetched
	// (Events after a held one on its partition wait with it: order.)
	// The whole outage: nothing dead-lettered, nothing of the new schema
	// out, the worker unready; the fetched schema's events delivered.
	for time.Since(down) < OutageFor(t) {
		if d := DeadLetters(ctx, t, b.Addrs()); d != 0 || late.Total() != 0 {
			t.Fatalf("%v into the outage: %d dead letters, %d events of the new schema delivered", time.Since(down), d, late.Total())
		}
		time.Sleep(200 * time.Millisecond) // the outage's own length, not a synchronisation
	}
	if err := w.Ready(); !errors.Is(err, schemaregistry.ErrUnreachable) || early.Total() != 2*n {
		t.Fatalf("after the outage: Ready %v, %d of %d events of the fetched schema delivered", err, early.Total(), 2*n)
	}
	if up, waits := Gauge(t, w, "throttler_schema_registry_up"), Gauge(t, w, "throttler_schema_waits_total"); up != 0 || waits == 0 {
		t.Errorf("metrics during the outage: up %v, waits %v", up, waits)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	testwait.Eventually(t, "the held events delivered", func() bool { return late.Total() >= n })
	resumed := time.Since(back)
	if first := FirstAfter(late, back); first.Sub(back) > 5*time.Second || resumed > 5*time.Second {
		t.Errorf("delivery resumed %v after the registry's return, all delivered after %v; want within 5s", first.Sub(back), resumed)
	}
	t.Logf("outage %v: %d events held; delivery resumed %v after the registry came back, all delivered after %v",
		OutageFor(t), n, FirstAfter(late, back).Sub(back).Round(time.Millisecond), resumed.Round(time.Millisecond))
	testwait.Eventually(t, "the worker ready again", func() bool { return w.Ready() == nil })
	if late.Total() != n || early.Total() != 2*n || DeadLetters(ctx, t, b.Addrs()) != 0 {
		t.Errorf("delivered %d and %d of %d each, %d dead letters", late.Total(), early.Total(), n, DeadLetters(ctx, t, b.Addrs()))
	}
}
