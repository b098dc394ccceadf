package dashboard

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

const e2ePatience = 45 * time.Second

// e2eConfig is the workers' config: two window budgets and an experiment
// over every passed event.
func e2eConfig(brokers []string, now time.Time) *config.Config {
	begin, end := now.Add(-10*time.Minute), now.Add(50*time.Minute)
	cfg := &config.Config{
		Brokers:      brokers,
		Group:        "e2e",
		Topics:       config.Topics{Input: []string{"events"}, Output: "passed", Rejected: "rejected"},
		Delivery:     config.DeliveryExactlyOnce,
		SyncInterval: 200 * time.Millisecond,
		Fields:       config.Fields{Budget: "campaign", Key: "user", ID: "id"},
		Layers: []splitter.Layer{{Name: "ui", Experiments: []splitter.Experiment{{Name: "color", Allocation: 100,
			Variants: []splitter.Variant{{Name: "red", Weight: 1, Topic: "red"}, {Name: "blue", Weight: 1, Topic: "blue"}}}}}},
		Budgets: []config.Budget{
			// Far behind their ideal courses (a million passes a
			// second): they pass what comes.
			{Name: "alpha", Target: 3.6e9, Begin: begin, End: end},
			{Name: "beta", Target: 3.6e9, Begin: begin, End: end},
		},
		HTTP: config.HTTP{Listen: "127.0.0.1:0"},
	}
	cfg.ApplyDefaults()
	return cfg
}

// startWorkers runs n workers of cfg until the test ends and waits until
// they are ready.
func startWorkers(t *testing.T, cfg *config.Config, n int) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ws []*consumer.Worker
	done := make(chan error, n)
	for i := range n {
		w, _, err := app.NewWorker(cfg, consumer.WithLogger(zerolog.Nop()), consumer.TransactionalID(fmt.Sprintf("e2e-worker-%d", i+1)),
			consumer.ClientOpts(kgo.HeartbeatInterval(500*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		go func() { done <- w.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range n {
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	})
	eventually(t, "workers ready", func() bool {
		for _, w := range ws {
			if w.Ready() != nil {
				return false
			}
		}
		return true
	})
}

// eventually polls cond until it holds or e2ePatience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.EventuallyEvery(t, e2ePatience, 50*time.Millisecond, what, cond)
}

// committedAll reports whether group e2e has committed the end of events.
func committedAll(adm *kadm.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err1 := adm.ListEndOffsets(ctx, "events")
	committed, err2 := adm.FetchOffsets(ctx, "e2e")
	if err1 != nil || err2 != nil {
		return false
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup("events", o.Partition)
		done = done && ok && c.At >= o.Offset
	})
	return done
}

// passesByBudget counts the committed records of the output and variant
// topics by their budget header.
func passesByBudget(t *testing.T, brokers []string, adm *kadm.Client) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2ePatience)
	defer cancel()
	topics := []string{"passed", "red", "blue"}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[fmt.Sprint(o.Topic, o.Partition)] = o.Offset - 1
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]int{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the outputs: %v left", left)
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := fmt.Sprint(r.Topic, r.Partition)
			if last, ok := left[k]; ok && r.Offset >= last {
				delete(left, k)
			}
			if r.Attrs.IsControl() {
				return
			}
			for _, h := range r.Headers {
				if h.Key == pipeline.HeaderBudget {
					out[string(h.Value)]++
				}
			}
		})
	}
	return out
}

// TestDashboardEndToEnd runs a broker, two workers and the dashboard, and
// checks in headless Chromium what a person sees: the budget rows update
// without a reload until their achieved figures match what the output
// topics hold, a budget's curve is drawn, the workers and their
// partitions are listed, and the SRM warning appears once a skewed
// variant count is injected into the stats topic.
func TestDashboardEndToEnd(t *testing.T) {
	browser := newBrowser(t)
	dir := shotDir(t, false)
	rig := startE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*e2ePatience)
	defer cancel()
	cl, adm, url := rig.cl, rig.adm, rig.url

	// The page, before any event: both budgets, nothing achieved.
	if err := chromedp.Do(browser, chromedp.Navigate(url+"/")); err != nil {
		t.Fatal(err)
	}
	row := func(b string) string {
		return fmt.Sprintf(`document.querySelector('tr[data-budget="%s"] .achieved')?.dataset.achieved`, b)
	}
	waitTrue(t, browser, "two empty budget rows", row("alpha")+` === "0" && `+row("beta")+` === "0"`)
	eval[bool](t, browser, `window.loadMark = true`)

	// Events: the rows follow without a reload until the topics agree.
	var recs []*kgo.Record
	for i := range 1200 {
		b := "alpha"
		if i%3 == 0 {
			b = "beta"
		}
		user := fmt.Sprintf("u%d", i%400)
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(user), Value: fmt.Appendf(nil, `{"id":%d,"campaign":%q,"user":%q}`, i, b, user)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the group to commit every event", func() bool { return committedAll(adm) })
	passes := passesByBudget(t, rig.brokers, adm)
	t.Logf("output topics: %v", passes)
	if passes["alpha"] == 0 || passes["beta"] == 0 {
		t.Fatalf("passes %v: the test needs some of each", passes)
	}
	waitTrue(t, browser, "the rows to show the output topics' counts",
		fmt.Sprintf(`%s === "%d" && %s === "%d"`, row("alpha"), passes["alpha"], row("beta"), passes["beta"]))
	if !eval[bool](t, browser, `window.loadMark === true`) {
		t.Error("the page reloaded")
	}
	screenshot(t, browser, dir, "e2e-budgets.png")

	// A budget's own page draws its curve (reached by a click, in page).
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(`tr[data-budget="alpha"] a.name`))); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, browser, "alpha's curve", `location.pathname === "/budgets/alpha" && (document.querySelector("svg.chart polyline.achieved")?.points.length ?? 0) >= 2`)
	screenshot(t, browser, dir, "e2e-budget.png")

	// The workers and their partitions.
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(`nav a[data-view="workers"]`))); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, browser, "two live workers owning the four partitions",
		`document.querySelectorAll("#workers-view .badge.live").length === 2 && document.querySelectorAll("#workers-view tbody")[1]?.rows.length === 4`)
	screenshot(t, browser, dir, "e2e-workers.png")

	// A skewed variant count appears on the stats topic: the warning shows.
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(`nav a[data-view="experiments"]`))); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, browser, "the experiment, not flagged", `document.querySelector(".exp h3") != null && document.querySelector(".srm-warning") === null`)
	injectSkew(t, ctx, cl, rig.cfg.Topics.Stats)
	waitTrue(t, browser, "the SRM warning", `document.querySelector('.srm-warning[data-experiment="ui/color"]') !== null`)
	if !eval[bool](t, browser, `window.loadMark === true`) {
		t.Error("the page reloaded")
	}
	screenshot(t, browser, dir, "e2e-experiments.png")
}

// e2eRig is a kfake broker with two workers and the dashboard over their
// stats topic.
type e2eRig struct {
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	cfg     *config.Config
	url     string
}

func startE2E(t *testing.T) e2eRig {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	r := e2eRig{brokers: cluster.ListenAddrs()}
	if r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.brokers...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	r.adm = kadm.NewClient(r.cl)
	r.cfg = e2eConfig(r.brokers, time.Now())
	startWorkers(t, r.cfg, 2)
	ctx, cancel := context.WithTimeout(context.Background(), e2ePatience)
	defer cancel()
	view, err := stats.NewView(ctx, r.cfg.Topics.Stats, []kgo.Opt{kgo.SeedBrokers(r.brokers...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(view.Close)
	r.url = serveOn(t, New(view, Topic(r.cfg.Topics.Stats), SampleEvery(100*time.Millisecond)))
	return r
}

// serveOn serves s on a loopback port until the test ends and returns its
// URL.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// injectSkew publishes, for ui/color, the variant counts of a source no
// worker owns, far from the 50/50 split: what a broken splitter or counter
// would publish.
func injectSkew(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) {
	t.Helper()
	l, err := stats.NewLedger(topic, stats.LedgerState{Source: "events/99", Offset: -1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	skew, err := l.Records(stats.Changes{Variants: []stats.VariantCounts{{Layer: "ui", Experiment: "color",
		Counts: []stats.VariantCount{{Variant: "red", Count: 6000, Keys: 6000}, {Variant: "blue", Count: 3000, Keys: 3000}}}}}, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, skew...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
