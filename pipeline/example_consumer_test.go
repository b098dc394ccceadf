package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
)

// The standard pipeline inside a franz-go consumer of one's own: the
// consumer polls, each partition's chain decides where every record goes,
// and the consumer writes it there. The events of budget "spring", far
// from its target, pass; an event of a budget the tree does not hold and
// a record that is not JSON do not. (An embedded kfake broker stands in
// for a cluster, and a fixed clock for the wall clock.)
func Example_consumer() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("events"),
		kgo.DefaultProduceTopic("events"), kgo.AllowAutoTopicCreation())
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	for i := 0; i < 4; i++ {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, `{"budget":"spring","user":"u%d"}`, i)}, nil)
	}
	cl.Produce(ctx, &kgo.Record{Value: []byte(`{"budget":"autumn","user":"u9"}`)}, nil)
	cl.Produce(ctx, &kgo.Record{Value: []byte("not json")}, nil)
	if err := cl.Flush(ctx); err != nil {
		panic(err)
	}

	// The flow tree holds the budgets; the decoder reads the events.
	begin := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tree, err := flow.NewTree([]flow.Budget{{Name: "spring", Target: 1e6, Begin: begin, End: begin.Add(time.Hour)}})
	if err != nil {
		panic(err)
	}
	dec, err := decode.NewDecoder(decode.KeyPath("user"))
	if err != nil {
		panic(err)
	}
	p, err := pipeline.Standard(pipeline.Spec{Decoder: dec,
		Router: pipeline.Router{Output: "events.passed", Rejected: "events.rejected", DeadLetter: "events.dlq"}})
	if err != nil {
		panic(err)
	}

	// One chain per partition, its deciders the partition's lanes.
	now := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	src, err := tree.Open("events/0", now, nil)
	if err != nil {
		panic(err)
	}
	part := pipeline.NewPartition("events", 0, 1)
	part.SetLanes(func(budget string, now time.Time) pipeline.Decider {
		if l := src.Get([]byte(budget), now); l != nil {
			return l
		}
		return nil
	}, nil)
	chain, err := p.Build(part)
	if err != nil {
		panic(err)
	}

	var rs pipeline.Records
	for seen := 0; seen < 6; {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			panic(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			seen++
			now = now.Add(time.Second)
			tree.Tune(now) // a worker tunes every 100 ms, between batches
			e := pipeline.NewEvent(r, now)
			o := chain.Run(e)
			why := e.RejectReason
			if e.Err != nil {
				why = string(e.Err.Reason)
			}
			fmt.Println(strings.TrimSpace(fmt.Sprintf("%-32s -> %s %s", r.Value, e.Topic, why)))
			if e.Topic != "" {
				cl.Produce(ctx, rs.Output(e, o, false), nil) // the consumer writes it
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		panic(err)
	}
	// Output:
	// {"budget":"spring","user":"u0"}  -> events.passed
	// {"budget":"spring","user":"u1"}  -> events.passed
	// {"budget":"spring","user":"u2"}  -> events.passed
	// {"budget":"spring","user":"u3"}  -> events.passed
	// {"budget":"autumn","user":"u9"}  -> events.dlq unknown_budget
	// not json                         -> events.dlq not_json
}
