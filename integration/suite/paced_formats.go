package suite

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

func RunPacedFormat(t *testing.T, k BrokerKind, format string) {
	const (
		rate   = 1000
		window = 20 * time.Second
		target = 5000 // a quarter of the traffic
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, srv := SharedCluster(t, k, 6), StartRegistry(t)
	addrs, name := b.Addr, b.Name
	CreateTopic(ctx, t, addrs, name("events"), 6, nil)
	var enc loadgen.Encoder
	if format != loadgen.FormatJSON {
		cl, err := sr.NewClient(sr.URLs(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		if enc, err = loadgen.Register(ctx, cl, name("events")+"-value", format); err != nil {
			t.Fatal(err)
		}
	}
	// The budget finishes 2 s before the window's end (reserve): the
	// events of its last moments are read once the worker catches up with
	// the load, which on a loaded machine is a fraction of a second late,
	// and a 20 s window has no room for that otherwise (1% of it is 0.2 s).
	begin := time.Now().Add(8 * time.Second).Truncate(time.Second)
	end := begin.Add(window)
	cfg, err := config.Parse(fmt.Appendf(nil, `brokers: [%s]
group: %s
topics: {input: [%s], output: %s, partitions: 6}
fields: {budget: campaign, key: user, id: id, time: ts}
format: {input: %s}
schema_registry: {urls: [%q]}
budgets: [{name: campaign, target: %d, begin: %s, end: %s, reserve: 2s}]
http: {listen: "127.0.0.1:0"}
%s`, addrs, name("paced-"+format), name("events"), name("passed"), format, srv.URL(), target,
		begin.Format(time.RFC3339), end.Format(time.RFC3339), k.GroupYAML(GroupTimeouts{})))
	if err != nil {
		t.Fatal(err)
	}
	_, tree, stop := RunWorker(ctx, t, cfg, zerolog.WarnLevel)
	out := FollowOutput(ctx, t, addrs, name("passed"), "campaign")

	prod, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addrs)...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	g, err := loadgen.New(loadgen.Config{Seed: 7, Users: 500, Budgets: []loadgen.Budget{{Name: "campaign", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// The load from now to a little after the window's end.
	if _, err := loadgen.Run(ctx, prod, g, loadgen.RunConfig{Topic: name("events"), Rate: rate,
		Duration: time.Until(end.Add(2 * time.Second)), Encoder: enc}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the worker to count what the output holds", func() bool {
		r, ok := LocalReport(tree, "campaign")
		return ok && uint64(out.Total()) == r && out.Total() > 0
	})
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	got := out.Total()
	t.Logf("%s: delivered %d of %d (%+.2f%%)", format, got, target, 100*float64(got-target)/target)
	if math.Abs(float64(got-target)) > 0.01*target {
		t.Errorf("%s: delivered %d passes, want within 1%% of %d", format, got, target)
	}
}

// LocalReport returns the passes the worker's tree counts for budget.
func LocalReport(tree *flow.Tree, budget string) (uint64, bool) {
	var n uint64
	ok := false
	for _, r := range tree.Reports(time.Now(), nil) {
		if r.Budget == budget {
			n, ok = n+r.Total.Passed, true
		}
	}
	return n, ok
}
