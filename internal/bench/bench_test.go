package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/throttler/throttler/consumer"
)

// TestRunTiny runs a tiny bench in both delivery modes and checks that the
// result is well formed. It asserts no speed.
func TestRunTiny(t *testing.T) {
	for _, d := range []consumer.Delivery{consumer.ExactlyOnce, consumer.AtLeastOnce} {
		t.Run(d.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{Records: 20000, Delivery: d, Rounds: 1, Partitions: 4, DataDir: t.TempDir()})
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
			for _, k := range []string{"records", "pipeline_rps", "passthrough_rps", "ratio"} {
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
			if len(res.Rounds) != 2 || res.Rounds[0].Side != "passthrough" || res.Rounds[1].Side != "pipeline" {
				t.Fatalf("rounds %+v", res.Rounds)
			}
			if p := res.Rounds[1].Passed; !(p >= 0 && p <= 1) { // 0 when the run ends before the first tune
				t.Errorf("pipeline passed fraction %v, want in [0, 1]", p)
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
	for _, c := range []Config{{Records: -1}, {Rounds: -2}, {Partitions: -1}, {Delivery: 9}, {Format: "xml"}} {
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
