package docker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// grafanaDashboard is what these tests read of a Grafana dashboard.
type grafanaDashboard struct {
	UID    string         `json:"uid"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func loadGrafana(t *testing.T) grafanaDashboard {
	t.Helper()
	data, err := os.ReadFile("grafana/dashboards/throttler.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("throttler.json: %v", err)
	}
	return d
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestComposePrometheus: Prometheus scrapes every worker's metrics port,
// and the web dashboard reads the workers' stats topic.
func TestComposePrometheus(t *testing.T) {
	c := loadCompose(t)
	cfg, err := config.Load("throttler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, metricsPort, _ := strings.Cut(cfg.HTTP.Listen, ":")
	var want []string
	for name, s := range c.Services {
		if len(s.Command) > 0 && s.Command[0] == "run" {
			want = append(want, name+":"+metricsPort)
		}
	}
	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &prom)
	var got []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.MetricsPath != "/metrics" {
			t.Errorf("metrics_path %q", sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("prometheus scrapes %v, the workers are %v", got, want)
	}
	ps := c.Services["prometheus"]
	if len(ps.Command) == 0 || !slices.Contains(ps.Volumes, "./prometheus.yml:"+flagValue(strings.Split(ps.Command[0], "="), "--config.file")+":ro") {
		t.Errorf("prometheus does not read the mounted prometheus.yml: %v %v", ps.Command, ps.Volumes)
	}
	d := c.Services["dashboard"]
	if len(d.Command) == 0 || d.Command[0] != "dashboard" || flagValue(d.Command, "--stats-topic") != cfg.Topics.Stats ||
		flagValue(d.Command, "--brokers") != cfg.Brokers[0] || !slices.Contains(d.Ports, "8080:8080") || flagValue(d.Command, "--listen") != ":8080" {
		t.Errorf("dashboard service %v %v", d.Command, d.Ports)
	}
}

// TestComposeGrafana: Grafana mounts its provisioning and the dashboard,
// its data source is the Prometheus service, and the dashboard's panels
// use it.
func TestComposeGrafana(t *testing.T) {
	g := loadCompose(t).Services["grafana"]
	mounts := map[string]string{}
	for _, v := range g.Volumes {
		parts := strings.Split(v, ":")
		mounts[parts[1]] = parts[0]
		if _, err := os.Stat(parts[0]); err != nil {
			t.Errorf("grafana mounts %s: %v", parts[0], err)
		}
	}
	if mounts["/etc/grafana/provisioning"] != "./grafana/provisioning" {
		t.Errorf("grafana provisioning not mounted: %v", g.Volumes)
	}
	var dsFile struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yaml", &dsFile)
	if len(dsFile.Datasources) != 1 || dsFile.Datasources[0].URL != "http://prometheus:9090" || dsFile.Datasources[0].Type != "prometheus" {
		t.Errorf("data sources %+v: want the prometheus service", dsFile.Datasources)
	}
	var provFile struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/throttler.yaml", &provFile)
	if len(provFile.Providers) != 1 || mounts[provFile.Providers[0].Options.Path] != "./grafana/dashboards" {
		t.Errorf("dashboard provider %+v does not read the mounted dashboards (%v)", provFile.Providers, mounts)
	}
	home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if dir, file := filepath.Split(home); mounts[strings.TrimSuffix(dir, "/")] != "./grafana/dashboards" || file != "throttler.json" {
		t.Errorf("home dashboard %q is not the mounted throttler.json", home)
	}
	for _, p := range loadGrafana(t).Panels {
		if p.Type != "row" && p.Datasource.UID != dsFile.Datasources[0].UID {
			t.Errorf("panel %q uses data source %q", p.Title, p.Datasource.UID)
		}
	}
}

// metricRE finds the metric names of a PromQL expression.
var metricRE = regexp.MustCompile(`\bthrottler_[a-z0-9_]+`)

// TestGrafanaQueriesNameExportedMetrics runs a worker of the compose
// run's config against kfake, with the compose run's load for two
// seconds, and checks that every query of the Grafana dashboard names metrics that
// the worker's registry really gathers.
func TestGrafanaQueriesNameExportedMetrics(t *testing.T) {
	queries := grafanaMetrics(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := runComposeWorker(t, ctx)
	var missing []string
	// The worker registers some series on its first events: poll until
	// every query's metric is there or the minute runs out.
	testwait.Poll(time.Minute, 100*time.Millisecond, func() bool {
		exported := gathered(t, w)
		missing = missing[:0]
		for n := range queries {
			if !exported[n] {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0 || ctx.Err() != nil
	})
	for _, n := range missing {
		t.Errorf("panels %q query %s, which the worker does not export", queries[n], n)
	}
}

// grafanaMetrics returns the metrics the dashboard's queries name, with
// the panels that name them.
func grafanaMetrics(t *testing.T) map[string][]string {
	t.Helper()
	queries := map[string][]string{}
	for _, p := range loadGrafana(t).Panels {
		for _, tg := range p.Targets {
			names := metricRE.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no throttler_ metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				queries[n] = append(queries[n], p.Title)
			}
		}
	}
	if len(queries) < 10 {
		t.Fatalf("only %d metrics queried: %v", len(queries), queries)
	}
	return queries
}

// runComposeWorker runs a worker of the compose run's config against
// kfake until the test ends, fed with the compose run's load for two
// seconds and a dead letter.
func runComposeWorker(t *testing.T, ctx context.Context) *consumer.Worker {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cfg, err := config.Load("throttler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Brokers = cluster.ListenAddrs()
	cfg.HTTP.Listen = ""
	cfg.SyncInterval = 200 * time.Millisecond
	w, _, err := app.NewWorker(cfg, consumer.WithLogger(zerolog.Nop()))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The compose run's load generator's events, and a dead letter.
	budgets, err := loadgen.ParseBudgets(flagValue(loadCompose(t).Services["loadgen"].Command, "--budgets"))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := loadgen.New(loadgen.Config{Seed: 1, Users: 100, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadgen.Run(ctx, cl, gen, loadgen.RunConfig{Topic: "events", Rate: 1000, Count: 2000}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return w
}

// gathered returns the names a worker's registry gathers, a histogram's
// series included (_bucket, _sum, _count).
func gathered(t *testing.T, w *consumer.Worker) map[string]bool {
	t.Helper()
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		out[mf.GetName()] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[mf.GetName()+s] = true
			}
		}
	}
	return out
}
