package suite

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

func RunExperimentSplit(t *testing.T, k BrokerKind) {
	const events = 100_000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := SharedCluster(t, k, 12)
	name := b.Name
	CreateTopic(ctx, t, b.Addr, name("events"), 12, nil)

	now := time.Now()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`brokers: [%s]
group: %s
topics: {input: [%s], output: %s, rejected: %s, partitions: 12}
delivery: at-least-once
%sfields: {budget: campaign, key: user, id: id}
budgets:
  - {name: all, target: 1e12, begin: %s, end: %s}
layers:
  - name: ranking
    experiments:
      - name: new-model
        allocation: 30
        variants:
          - {name: control, weight: 1, topic: %s}
          - {name: treatment, weight: 1, topic: %s}
      - name: boost
        start: 50
        allocation: 20
        variants:
          - {name: low, weight: 3, topic: %s}
          - {name: high, weight: 1, topic: %s}
http: {listen: "127.0.0.1:0"}
`, b.Addr, name("split"), name("events"), name("passed"), name("rejected"), k.GroupYAML(GroupTimeouts{}),
		now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339),
		name("exp.control"), name("exp.treatment"), name("exp.low"), name("exp.high"))))
	if err != nil {
		t.Fatal(err)
	}

	// 100,000 events over a million users (zipf: some users many times)
	g, err := loadgen.New(loadgen.Config{Seed: 3, Users: 1_000_000, Budgets: []loadgen.Budget{{Name: "all", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(b.Addr)...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadgen.Run(ctx, pc, g, loadgen.RunConfig{Topic: name("events"), Count: events}); err != nil {
		t.Fatal(err)
	}
	pc.Close()

	wctx, stop := context.WithCancel(ctx)
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		w, _, err := app.NewWorker(cfg, consumer.WithLogger(zerolog.Nop()))
		if err != nil {
			t.Fatal(err)
		}
		go func() { errs <- w.Run(wctx) }()
	}

	// read every routed event back (at-least-once: count each id once)
	var topics []string
	for _, s := range []string{"passed", "exp.control", "exp.treatment", "exp.low", "exp.high", "rejected"} {
		topics = append(topics, name(s))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(b.Addr)...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	variantOf := map[string]string{}      // user -> topic
	seen := map[string]string{}           // id -> topic
	inExp := map[string]map[string]bool{} // user -> experiments
	count := map[string]int{}             // events per topic
	users := map[string]int{}             // distinct users per topic
	for len(seen) < events && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			id, user, exp := "", string(r.Key), ""
			for _, h := range r.Headers {
				if h.Key == "throttler-experiment" {
					exp = string(h.Value)
				}
			}
			id = JsonField(r.Value, "id")
			r.Topic = strings.TrimPrefix(r.Topic, b.Prefix) // the checks name topics without the test's prefix
			if _, dup := seen[id]; dup {
				return
			}
			seen[id] = r.Topic
			count[r.Topic]++
			if r.Topic == "rejected" {
				for _, h := range r.Headers {
					if h.Key == "throttler-reason" {
						count["reason:"+string(h.Value)]++
					}
				}
				return
			}
			if v, ok := variantOf[user]; ok && v != r.Topic {
				t.Errorf("user %s routed to %s and %s", user, v, r.Topic)
			} else if !ok {
				users[r.Topic]++
			}
			variantOf[user] = r.Topic
			if exp != "" {
				if inExp[user] == nil {
					inExp[user] = map[string]bool{}
				}
				inExp[user][exp] = true
			}
		})
	}
	stop()
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	if len(seen) != events {
		t.Fatalf("read back %d of %d events", len(seen), events)
	}
	for user, exps := range inExp {
		if len(exps) > 1 {
			t.Errorf("user %s in %d experiments of one layer", user, len(exps))
		}
	}
	t.Logf("events per topic: %v; users per topic: %v", count, users)
	if count["rejected"] != 0 {
		t.Errorf("%d events rejected, the budget lets everything through", count["rejected"])
	}
	// Bucketing splits keys: the share of an experiment's users in each
	// variant is held to its weight (event shares follow the users'
	// zipf-skewed activity).
	check := func(a, b string, wa float64) {
		n := users[a] + users[b]
		if n == 0 {
			t.Fatalf("no users in %s/%s", a, b)
		}
		share := float64(users[a]) / float64(n)
		if math.Abs(share-wa) > 0.01 {
			t.Errorf("%s share %.4f of its experiment, weight %.4f", a, share, wa)
		}
	}
	check("exp.control", "exp.treatment", 0.5)
	check("exp.low", "exp.high", 0.75)
}
