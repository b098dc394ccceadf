package bench

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/tools/broker"
)

// TestRunTiny runs a tiny bench in both delivery modes and checks that the
// result is well formed: exactly-once with the rejected topic, 20 budgets
// and the one-budget reference, at-least-once dropping rejects with one
// budget and the decode reference. It asserts no speed.
func TestRunTiny(t *testing.T) {
	for _, c := range []Config{
		{Delivery: consumer.ExactlyOnce, Budgets: 20, Skew: 1.1, OneBudgetReference: true},
		{Delivery: consumer.AtLeastOnce, DropRejected: true, DecodeReference: true},
	} {
		d := c.Delivery
		t.Run(d.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c.Records, c.Rounds, c.Partitions, c.DataDir = 20000, 1, 4, t.TempDir()
			res, err := Run(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"records", "pipeline_rps", "passthrough_rps", "ratio", "rejected_topic", "budgets", "budget_skew",
				"broker", "broker_in_process", "pipeline_cpu_s_per_million", "passthrough_cpu_s_per_million"} {
				if _, ok := got[k]; !ok {
					t.Errorf("JSON %s lacks %q", b, k)
				}
			}
			if res.Records != 20000 || res.Delivery != d.String() {
				t.Errorf("records %d delivery %q", res.Records, res.Delivery)
			}
			if res.Broker != "embedded" || !res.BrokerInProcess {
				t.Errorf("broker %q in process %v, want the embedded one", res.Broker, res.BrokerInProcess)
			}
			if !(res.PipelineRPS > 0) || !(res.PassthroughRPS > 0) {
				t.Errorf("rates %v %v, want positive", res.PipelineRPS, res.PassthroughRPS)
			}
			if want := res.PipelineRPS / res.PassthroughRPS; res.Ratio != want {
				t.Errorf("ratio %v, want %v", res.Ratio, want)
			}
			sides := []string{"passthrough", "pipeline"}
			if c.DecodeReference {
				sides = []string{"passthrough", "decode", "pipeline"}
			}
			if c.OneBudgetReference {
				sides = append(sides, "one-budget")
			}
			if len(res.Rounds) != len(sides) {
				t.Fatalf("rounds %+v, want sides %v", res.Rounds, sides)
			}
			for i, r := range res.Rounds {
				if r.Side != sides[i] || !(r.RPS > 0) || !(r.CPUPerMillion > 0) {
					t.Fatalf("rounds %+v, want sides %v at positive rates", res.Rounds, sides)
				}
			}
			pl := res.Rounds[slices.Index(sides, "pipeline")]
			if res.PipelineCPU != pl.CPUPerMillion {
				t.Errorf("pipeline CPU %v, want its round's %v", res.PipelineCPU, pl.CPUPerMillion)
			}
			if c.DecodeReference {
				if _, ok := got["decode_ratio"]; !ok || res.DecodeRPS != res.Rounds[1].RPS || res.DecodeRatio != res.DecodeRPS/res.PassthroughRPS ||
					res.PipelineDecodeRatio != res.PipelineRPS/res.DecodeRPS {
					t.Errorf("decode reference: JSON %s, result %+v", b, res)
				}
			} else if _, ok := got["decode_rps"]; ok {
				t.Errorf("JSON %s has decode_rps without the decode reference", b)
			}
			if c.OneBudgetReference {
				ob := res.Rounds[len(sides)-1]
				if ob.Produced < 1 || res.OneBudgetRPS != ob.RPS || res.BudgetsRatio != res.PipelineRPS/ob.RPS {
					t.Errorf("one-budget reference: round %+v, result %+v", ob, res)
				}
			} else if _, ok := got["one_budget_rps"]; ok {
				t.Errorf("JSON %s has one_budget_rps without the one-budget reference", b)
			}
			if _, ok := got["streams_rps"]; ok {
				t.Errorf("JSON %s has streams_rps without the Streams reference", b)
			}
			if p := pl.Passed; !(p >= 0 && p <= 1) { // 0 when the run ends before the first tune
				t.Errorf("pipeline passed fraction %v, want in [0, 1]", p)
			}
			if res.RejectedTopic == c.DropRejected || res.Budgets != max(c.Budgets, 1) || res.Skew != c.Skew {
				t.Errorf("result %+v does not echo config %+v", res, c)
			}
			// Every record is decided once (an aborted transaction's are
			// decided again): with the rejected topic every decided
			// record is produced; without it only the passed ones.
			if !c.DropRejected && pl.Produced < 1 {
				t.Errorf("produced fraction %v with the rejected topic, want at least 1", pl.Produced)
			}
			if c.DropRejected && pl.Produced != pl.Passed {
				t.Errorf("produced fraction %v without the rejected topic, want the passed %v", pl.Produced, pl.Passed)
			}
		})
	}
}

// TestRunTinyFormats runs a tiny bench of Avro and Protobuf events: the
// pipeline decodes every record (no dead letter). It asserts no speed.
func TestRunTinyFormats(t *testing.T) {
	for _, f := range []string{"avro", "protobuf"} {
		t.Run(f, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{Records: 20000, Rounds: 1, Partitions: 4, DataDir: t.TempDir(), Format: f})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != f || len(res.Rounds) != 2 || res.Rounds[1].DeadLetters != 0 || !(res.PipelineRPS > 0) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestRunExternalBroker runs a tiny bench on a broker the bench did not
// start (kfake in the test's process, through Config.Brokers): the result
// says the broker is external, and the run leaves no topic or group of
// its own behind.
func TestRunExternalBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.DataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := Run(ctx, Config{Records: 5000, Rounds: 1, Partitions: 3, Brokers: b.Addrs(), DecodeReference: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Broker != "external" || res.BrokerInProcess || len(res.Rounds) != 3 || !(res.PipelineDecodeRatio > 0) {
		t.Fatalf("result %+v", res)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, "bench-") {
			t.Errorf("topic %s left behind", name)
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups() {
		if strings.HasPrefix(g, "bench-") {
			t.Errorf("group %s left behind", g)
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	for _, c := range []Config{{Records: -1}, {Rounds: -2}, {Partitions: -1}, {Delivery: 9}, {Format: "xml"}, {Budgets: -1}, {Budgets: 5, Skew: 0.5},
		{Brokers: []string{""}}, {SyncInterval: -1}} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestSummarize checks the medians and quotients of a result's rounds.
func TestSummarize(t *testing.T) {
	res := Result{Rounds: []Round{
		{Side: sidePassthrough, RPS: 100, CPUPerMillion: 1},
		{Side: sidePipeline, RPS: 80, CPUPerMillion: 2},
		{Side: sideStreams, RPS: 20, CPUPerMillion: 10},
		{Side: sidePassthrough, RPS: 120, CPUPerMillion: 3},
		{Side: sidePipeline, RPS: 60, CPUPerMillion: 4},
		{Side: sideStreams, RPS: 40, CPUPerMillion: 6},
	}}
	res.summarize()
	want := Result{Rounds: res.Rounds, PassthroughRPS: 110, PassthroughCPU: 2, PipelineRPS: 70, PipelineCPU: 3, Ratio: 70.0 / 110,
		StreamsRPS: 30, StreamsCPU: 8, StreamsRatio: 70.0 / 30, StreamsCPURatio: 3.0 / 8}
	if got, _ := json.Marshal(res); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("summarize:\n got %s\nwant %s", got, must(json.Marshal(want)))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 1}, 2.5}, {[]float64{5, 1, 3}, 3}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRoundsRotate: round i starts at side i, so that every side runs
// after every other over the rounds.
func TestRoundsRotate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Records: 2000, Rounds: 3, Partitions: 2, DataDir: t.TempDir(), DecodeReference: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rounds {
		got = append(got, r.Side)
	}
	want := []string{"passthrough", "decode", "pipeline", "decode", "pipeline", "passthrough", "pipeline", "passthrough", "decode"}
	if !slices.Equal(got, want) {
		t.Fatalf("sides %v, want %v", got, want)
	}
}
