package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/config"
)

func TestTargets(t *testing.T) {
	c := Config{Rate: 2000, Duration: time.Minute, RewardShare: 0.2}
	got := targets(c)
	want := map[string]float64{
		"spring-sale": 5000, // 2000/s × 60s × 1/6 weights × 1/4
		"premium":     2000,
		"clicks-goal": 4000, // half of 40000 passed, 20% clicked
		"brand-a":     4000,
		"brand-b":     2000,
		"brand":       6000,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("target of %s = %v, want %v", name, got[name], w)
		}
	}
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cfg, err := workerConfig(c, []string{"127.0.0.1:9092"}, begin, begin.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Budgets) != len(campaigns) || cfg.Delivery != config.DeliveryExactlyOnce || len(cfg.Layers) != 1 {
		t.Fatalf("config %+v", cfg)
	}
}

func TestTable(t *testing.T) {
	var tb table
	tb.add("budget", "target")
	tb.add("  a", "10")
	tb.add("long-name", "1000")
	var b strings.Builder
	tb.write(&b)
	want := "budget     target\n  a            10\nlong-name    1000\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestRunShort runs the whole demo with a short window and checks that
// it completes, that events were produced and passed, and that the
// summary agrees with the topics and with the cluster's own counters. It
// asserts nothing about speed or accuracy: the 1% bar is for the full run.
// It runs with JSON events, and with Avro events through a registry.
func TestRunShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker and three workers for about 30s")
	}
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { runShort(t, format) })
	}
}

func runShort(t *testing.T, format string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Config{Duration: 12 * time.Second, Rate: 1000, Progress: &progress, Dashboard: "127.0.0.1:0", Format: format})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Dashboard, "http://127.0.0.1:") || !strings.Contains(progress.String(), "dashboard: "+res.Dashboard+"\n") {
		t.Errorf("dashboard %q not announced:\n%s", res.Dashboard, progress.String())
	}
	t.Logf("ready after %v; warnings %q", res.ReadyAfter, res.Warnings)
	for _, w := range res.Warnings {
		if strings.Contains(w, "stats view") || strings.Contains(w, "did not consume") {
			t.Errorf("the end did not settle: %s", w) // it waited settleTimeout for nothing
		}
	}
	if res.Produced == 0 || res.Events != res.Produced {
		t.Errorf("produced %d, input topic holds %d", res.Produced, res.Events)
	}
	if !strings.Contains(progress.String(), "spring-sale") || strings.Contains(progress.String(), "\x1b") {
		t.Errorf("progress:\n%s", progress.String())
	}
	var leaves uint64 // passes of the budgets events name
	for _, b := range res.Budgets {
		t.Logf("%-12s target %5.0f achieved %5.0f counted %5.0f error %+.2f%% max deviation %.2f%%",
			b.Name, b.Target, b.Achieved, b.Counted, 100*b.FinalError, 100*b.MaxDeviation)
		if b.Achieved <= 0 {
			t.Errorf("%s: nothing achieved", b.Name)
		}
		if b.Achieved != b.Counted {
			t.Errorf("%s: the topics hold %v, the stats topic says %v", b.Name, b.Achieved, b.Counted)
		}
		if b.FinalError != (b.Achieved-b.Target)/b.Target {
			t.Errorf("%s: final error %v", b.Name, b.FinalError)
		}
		if b.Kind == string(config.KindPasses) && float64(b.Passes) != b.Achieved {
			t.Errorf("%s: %d passes in the topics, achieved %v", b.Name, b.Passes, b.Achieved)
		}
		if b.Name != "brand" {
			leaves += b.Passes
		}
	}
	inTopics := res.Experiment.Outside
	for _, v := range res.Experiment.Variants {
		if v.Events == 0 {
			t.Errorf("variant %s got no event", v.Name)
		}
		inTopics += v.Events
	}
	if inTopics != leaves || inTopics == 0 {
		t.Errorf("output topics hold %d events, the budgets' passes sum to %d", inTopics, leaves)
	}

	var sum, report bytes.Buffer
	if err := res.WriteSummary(&sum); err != nil || !strings.Contains(sum.String(), "premium") {
		t.Errorf("summary %v:\n%s", err, sum.String())
	}
	if err := res.WriteJSON(&report); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Budgets []struct {
			Name         string   `json:"name"`
			Target       float64  `json:"target"`
			Achieved     float64  `json:"achieved"`
			FinalError   *float64 `json:"final_error"`
			MaxDeviation *float64 `json:"max_deviation"`
		} `json:"budgets"`
		Experiment struct {
			Variants []struct {
				Name   string `json:"name"`
				Events uint64 `json:"events"`
			} `json:"variants"`
		} `json:"experiment"`
	}
	if err := json.Unmarshal(report.Bytes(), &back); err != nil || len(back.Budgets) != len(res.Budgets) ||
		back.Budgets[0].FinalError == nil || back.Budgets[0].MaxDeviation == nil || len(back.Experiment.Variants) != 2 {
		t.Errorf("report %v:\n%s", err, report.String())
	}
	var svg bytes.Buffer
	if err := res.WriteSVG(&svg); err != nil || !strings.Contains(svg.String(), "<svg") || strings.Contains(svg.String(), "NaN") {
		t.Errorf("chart %v", err)
	}
}
