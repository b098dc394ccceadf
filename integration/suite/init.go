package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
)

// DemoCampaigns are the campaigns the demo's events name.
var DemoCampaigns = []string{"spring-sale", "premium", "clicks-goal", "brand-a", "brand-b"}

func InitAndRun(t *testing.T, registryURL, format, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, brokers := StartBroker(t, 4)
	gen := []string{"loadgen", "--brokers", brokers, "--topic", topic, "--format", format, "--partitions", "4",
		"--budgets", strings.Join(DemoCampaigns, ","), "--count", "1500", "--rate", "1500", "--log-level", "warn"}
	reg := []string{}
	if format != "json" {
		reg = []string{"--registry", registryURL}
	}
	if code, _, stderr := RunBin(t, append(gen, reg...)...); code != 0 {
		t.Fatalf("loadgen: exit %d: %s", code, stderr)
	}

	before := ClusterState(ctx, t, brokers)
	out := filepath.Join(t.TempDir(), "throttler.yaml")
	code, stdout, stderr := RunBin(t, append([]string{"init", "--brokers", brokers, "--topic", topic, "--out", out, "--log-level", "warn"}, reg...)...)
	if code != 0 || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("throttler init --topic %s:\n%s", topic, stdout)
	if after := ClusterState(ctx, t, brokers); after != before {
		t.Errorf("init changed the cluster:\nbefore %s\nafter  %s", before, after)
	}

	cfg, err := config.Load(out)
	if err != nil {
		t.Fatalf("the written config: %v", err)
	}
	if f := cfg.Fields; f.Budget != "campaign" || f.Key != "user" || f.ID != "id" || f.Score != "score" || f.Time != "ts" {
		t.Errorf("proposed fields %+v, want campaign, user, id, score, ts\n%s", f, stdout)
	}
	var names []string
	for _, b := range cfg.Budgets {
		names = append(names, b.Name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(DemoCampaigns))
	if !slices.Equal(names, want) {
		t.Errorf("budgets %v, want %v", names, want)
	}
	if format != "json" && (cfg.Format.Input != format || !slices.Equal(cfg.SchemaRegistry.URLs, []string{registryURL})) {
		t.Errorf("format %q, registry %v", cfg.Format.Input, cfg.SchemaRegistry.URLs)
	}
	if code, stdout, _ := RunBin(t, "validate", out); code != 0 || stdout != "ok\n" {
		t.Errorf("validate: exit %d, %q", code, stdout)
	}

	w := Start(t, "worker", "run", out, "--http", "127.0.0.1:0")
	line := w.WaitLine(t, `"http listening"`, time.Minute)
	addr := line[strings.Index(line, `"addr":"`)+8:]
	addr = addr[:strings.IndexByte(addr, '"')]
	if metrics := Get(t, "http://"+addr+"/metrics"); !strings.Contains(metrics, "throttler_build_info{") {
		t.Errorf("/metrics has no throttler_build_info")
	}
	// A paced budget passes nothing before it has measured the rate: the
	// events already on the topic are decided at once (rejected); events
	// that keep coming are delivered.
	w.WaitLine(t, `"partitions assigned"`, time.Minute)
	more := Start(t, "loadgen", append([]string{"loadgen", "--brokers", brokers, "--topic", topic, "--format", format,
		"--budgets", strings.Join(DemoCampaigns, ","), "--seed", "2", "--count", "6000", "--rate", "300", "--log-level", "warn"}, reg...)...)
	defer more.Stop(t, syscall.SIGTERM, 10*time.Second) //nolint:errcheck // it may have ended
	passed := cfg.Topics.Output
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...), kgo.ConsumeTopics(passed), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	delivered := testwait.Poll(2*time.Minute, 10*time.Millisecond, func() bool {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		got = append(got, cl.PollFetches(pctx).Records()...)
		return len(got) >= 10
	})
	if !delivered {
		t.Fatalf("the worker delivered %d records to %s:\n%s", len(got), passed, w.Err)
	}
	for _, r := range got {
		if b := Header(r, pipeline.HeaderBudget); !slices.Contains(DemoCampaigns, b) {
			t.Errorf("a passed record names budget %q", b)
			break
		}
	}
	if err := w.Stop(t, syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("worker: %v\n%s", err, w.Err)
	}
}

// ClusterState describes the topics, their end offsets and the groups.
func ClusterState(ctx context.Context, t *testing.T, brokers string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range topics.Names() {
		fmt.Fprintf(&b, "%s:", name)
		for p := range int32(len(topics[name].Partitions)) {
			o, _ := ends.Lookup(name, p)
			fmt.Fprintf(&b, " %d", o.Offset)
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "groups %v", groups.Groups())
	return b.String()
}

// Get returns the body of url, failing the test when it cannot be read.
func Get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
