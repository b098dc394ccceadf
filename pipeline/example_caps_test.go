package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/pipeline"
)

// passAll decides every event a pass.
type passAll struct{}

func (passAll) Decide(time.Time, float64) flow.Verdict { return flow.Verdict{Pass: true} }

// TestUserPipelineWithCaps builds a pipeline of its own from the package's
// public API (decode, then the caps, then decide; no score, no split) and
// drives the caps' state as the worker does: what one partition's
// instance wrote at a commit (State.Flush, produced to the changelog) is
// what the next instance for that partition starts from.
func TestUserPipelineWithCaps(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in.caps"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	conn := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	caps, err := pipeline.NewCaps("in.caps", []pipeline.CapSpec{{Name: "per-user", Count: 1, Period: time.Hour}},
		conn, prometheus.NewRegistry(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder(decode.KeyPath("user"))
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.New(pipeline.Router{Output: "out", Rejected: "rejected", DeadLetter: "dlq"},
		pipeline.DecodeStage(dec), caps.Stage(), pipeline.DecideStage())
	if got := p.Changelogs(); len(got) != 1 || got[0] != "in.caps" {
		t.Fatalf("changelogs %v", got)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	run := func(part *pipeline.Partition, user string) string {
		t.Helper()
		c, err := p.Build(part)
		if err != nil {
			t.Fatal(err)
		}
		e := pipeline.NewEvent(&kgo.Record{Topic: "in", Partition: 1, Value: []byte(`{"budget":"spring","user":"` + user + `"}`), Timestamp: now}, now)
		c.Run(e)
		return e.Topic + "/" + e.RejectReason
	}

	lanes := func(string, time.Time) pipeline.Decider { return passAll{} } // every budget passes
	first := pipeline.NewPartition("in", 1, 0)
	first.SetLanes(lanes, nil)
	if got := run(first, "u"); got != "out/" {
		t.Fatalf("first event of u: %s", got)
	}
	kept := first.Kept()
	if len(kept) != 1 {
		t.Fatalf("the caps stage kept %d states", len(kept))
	}
	recs := kept[0].Flush(now)
	cl, err := kgo.NewClient(append(conn, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kept[0].Committed()

	// The partition moves: a new instance reads the changelog.
	second := pipeline.NewPartition("in", 1, 0)
	second.SetLanes(lanes, nil)
	if got := run(second, "u"); got != "rejected/"+pipeline.ReasonCap {
		t.Fatalf("u again on the partition's next instance: %s, want capped", got)
	}
	if got := run(second, "v"); got != "out/" {
		t.Fatalf("another user: %s", got)
	}
}
