package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/throttler/throttler/consumer"
)

// TestRunTiny runs a tiny bench in both delivery modes and checks that the
// result is well formed: exactly-once with the rejected topic and 20
// budgets, at-least-once dropping rejects with one budget and the decode
// reference. It asserts no speed.
func TestRunTiny(t *testing.T) {
	for _, c := range []Config{
		{Delivery: consumer.ExactlyOnce, Budgets: 20, Skew: 1.1},
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
			for _, k := range []string{"records", "pipeline_rps", "passthrough_rps", "ratio", "rejected_topic", "budgets", "budget_skew"} {
				if _, ok := got[k]; !ok {
					t.Errorf("JSON %s lacks %q", b, k)
				}
			}
			if res.Records != 20000 || res.Delivery != d.String() {
				t.Errorf("records %d delivery %q", res.Records, res.Delivery)
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
			if len(res.Rounds) != len(sides) {
				t.Fatalf("rounds %+v, want sides %v", res.Rounds, sides)
			}
			for i, r := range res.Rounds {
				if r.Side != sides[i] || !(r.RPS > 0) {
					t.Fatalf("rounds %+v, want sides %v at positive rates", res.Rounds, sides)
				}
			}
			pl := res.Rounds[len(sides)-1]
			if c.DecodeReference {
				if _, ok := got["decode_ratio"]; !ok || res.DecodeRPS != res.Rounds[1].RPS || res.DecodeRatio != res.DecodeRPS/res.PassthroughRPS {
					t.Errorf("decode reference: JSON %s, result %+v", b, res)
				}
			} else if _, ok := got["decode_rps"]; ok {
				t.Errorf("JSON %s has decode_rps without the decode reference", b)
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

func TestRunConfigErrors(t *testing.T) {
	for _, c := range []Config{{Records: -1}, {Rounds: -2}, {Partitions: -1}, {Delivery: 9}, {Format: "xml"}, {Budgets: -1}, {Budgets: 5, Skew: 0.5}} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
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
