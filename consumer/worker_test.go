package consumer

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/splitter"
)

const (
	inputPartitions = 12
	waitLong        = 60 * time.Second
)

var outputTopics = []string{"out", "out-red", "out-blue"}

// testEnv is a kfake cluster on 127.0.0.1 with the topics of the tests.
type testEnv struct {
	t       *testing.T
	cluster *kfake.Cluster
	addrs   []string
	adm     *kadm.Client
	admCl   *kgo.Client
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(inputPartitions, "events", "out", "out-red", "out-blue", "rejected", "dlq"),
		kfake.SeedTopics(4, "clicks"),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	env := &testEnv{t: t, cluster: c, addrs: c.ListenAddrs()}
	env.admCl, err = kgo.NewClient(kgo.SeedBrokers(env.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.admCl.Close)
	env.adm = kadm.NewClient(env.admCl)
	return env
}

func (env *testEnv) clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(env.addrs...),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
	}
}

// produce writes records synchronously.
func (env *testEnv) produce(recs []*kgo.Record) {
	env.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...))
	if err != nil {
		env.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		env.t.Fatal(err)
	}
}

// eventRecords returns n input events with ids from first; every 25th is
// bad in one of four ways.
func eventRecords(first, n int) (recs []*kgo.Record, bad int) {
	for i := first; i < first+n; i++ {
		var v string
		budget := "a"
		if i%3 == 0 {
			budget = "b"
		}
		switch {
		case i%100 == 0:
			v = fmt.Sprintf("garbage %d", i)
		case i%100 == 25:
			v = fmt.Sprintf(`{"id":%d,"budget":"zzz","user":"u1","score":1}`, i)
		case i%100 == 50:
			v = fmt.Sprintf(`{"id":%d,"budget":"a","user":"u1","score":-3}`, i)
		case i%100 == 75:
			v = fmt.Sprintf(`{"id":%d,"budget":"a","user":"u1"`, i)
		default:
			v = fmt.Sprintf(`{"id":%d,"budget":%q,"user":"u%d","score":%d}`, i, budget, i%500, i%10)
		}
		if i%25 == 0 {
			bad++
		}
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("u%d", i%500)), Value: []byte(v)})
	}
	return recs, bad
}

func recordID(r *kgo.Record) int {
	if res := gjson.GetBytes(r.Value, "id"); res.Exists() {
		return int(res.Int())
	}
	var id int
	if _, err := fmt.Sscanf(string(r.Value), "garbage %d", &id); err == nil {
		return id
	}
	return -1
}

func testBudgetsFlow(now time.Time) []flow.Budget {
	return []flow.Budget{
		{Name: "a", Target: 360000, Begin: now.Add(-time.Minute), End: now.Add(time.Hour)}, // ~100/s
		{Name: "b", Target: 500, Period: time.Hour},
	}
}

type runningWorker struct {
	w      *Worker
	cancel context.CancelFunc
	done   chan error
}

func (env *testEnv) startWorker(t *testing.T, name string, opts ...Opt) *runningWorker {
	t.Helper()
	return env.startWorkerWith(t, name, nil, opts...)
}

// startWorkerWith is startWorker with a hook that may change the worker
// before it runs.
func (env *testEnv) startWorkerWith(t *testing.T, name string, hook func(*Worker), opts ...Opt) *runningWorker {
	t.Helper()
	w := env.newWorker(t, name, opts...)
	if hook != nil {
		hook(w)
	}
	return runWorker(t, w)
}

// newWorker is a worker of the test's group, not yet running.
func (env *testEnv) newWorker(t *testing.T, name string, opts ...Opt) *Worker {
	t.Helper()
	tree, err := flow.NewTree(testBudgetsFlow(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder(decode.KeyPath("user"), decode.IDPath("id"), decode.ScorePath("score"), decode.RequireKey(true))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := splitter.New([]splitter.Layer{{Name: "ui", Experiments: []splitter.Experiment{{
		Name: "color", Allocation: 50,
		Variants: []splitter.Variant{{Name: "red", Weight: 1, Topic: "out-red"}, {Name: "blue", Weight: 1, Topic: "out-blue"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("worker", name).Logger()
	all := append([]Opt{
		ClientOpts(env.clientOpts()...),
		Group("g"),
		WithTopics(Topics{
			Input: []string{"events"}, Rewards: []string{"clicks"},
			Output: "out", Rejected: "rejected", DeadLetter: "dlq",
			Stats: "stats",
		}),
		WithSplitter(sp),
		RewardPaths("budget", "value"),
		SyncInterval(200 * time.Millisecond),
		WithLogger(log),
		HTTPListen("127.0.0.1:0"),
	}, opts...)
	w, err := NewWorker(tree, dec, all...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runWorker runs w until the test ends (or stop).
func runWorker(t *testing.T, w *Worker) *runningWorker {
	ctx, cancel := context.WithCancel(context.Background())
	rw := &runningWorker{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { rw.done <- w.Run(ctx) }()
	t.Cleanup(func() { rw.stop(t) })
	return rw
}

func (rw *runningWorker) stop(t *testing.T) {
	t.Helper()
	if rw.cancel == nil {
		return
	}
	rw.cancel()
	rw.cancel = nil
	select {
	case err := <-rw.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitLong):
		t.Error("worker did not stop")
	}
}

// waitCommitted waits until the group has committed the end of every
// partition of topic.
func (env *testEnv) waitCommitted(topic string) {
	env.t.Helper()
	env.waitCommittedGroup("g", topic)
}

func (env *testEnv) waitCommittedGroup(group, topic string) {
	env.t.Helper()
	testwait.Eventually(env.t, "group "+group+" to commit the end of "+topic, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err1 := env.adm.ListEndOffsets(ctx, topic)
		committed, err2 := env.adm.FetchOffsets(ctx, group)
		if err1 != nil || err2 != nil {
			return false
		}
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := committed.Lookup(topic, o.Partition)
			if !ok || c.At < o.Offset {
				done = false
			}
		})
		return done
	})
}

// readAll reads every committed record of the topics, up to their end
// offsets.
func (env *testEnv) readAll(topics ...string) map[string][]*kgo.Record {
	env.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	ends, err := env.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		env.t.Fatal(err)
	}
	pending := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if pending[o.Topic] == nil {
				pending[o.Topic] = map[int32]int64{}
			}
			pending[o.Topic][o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		env.t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]*kgo.Record{}
	for len(pending) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			env.t.Fatalf("reading %v: still pending %v", topics, pending)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := pending[r.Topic][r.Partition]; ok && r.Offset >= end-1 {
				delete(pending[r.Topic], r.Partition)
				if len(pending[r.Topic]) == 0 {
					delete(pending, r.Topic)
				}
			}
			if !r.Attrs.IsControl() {
				out[r.Topic] = append(out[r.Topic], r)
			}
		})
	}
	return out
}

// verify checks that every input id is in exactly one of the outputs, the
// rejected topic and the dead-letter topic, and that the ledgers count as
// many passes as there are output records.
func (env *testEnv) verify(t *testing.T, n, bad, badRewards int, rewards float64) {
	t.Helper()
	got := env.readAll(append(outputTopics, "rejected", "dlq")...)
	where := make(map[int]string, n)
	outputs := 0
	for topic, recs := range got {
		for _, r := range recs {
			if topic == "dlq" {
				if src, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceTopic); src == "clicks" {
					continue
				}
			}
			id := recordID(r)
			if id < 0 || id >= n {
				t.Fatalf("%s: record with id %d: %s", topic, id, r.Value)
			}
			if prev, dup := where[id]; dup {
				t.Fatalf("id %d in %s and %s", id, prev, topic)
			}
			where[id] = topic
			if topic != "rejected" && topic != "dlq" {
				outputs++
			}
		}
	}
	if len(where) != n {
		t.Fatalf("%d of %d ids accounted for", len(where), n)
	}
	dlq := 0
	badRewardSeen := 0
	for _, r := range got["dlq"] {
		if src, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceTopic); src == "clicks" {
			badRewardSeen++
			continue
		}
		dlq++
		for _, h := range []string{pipeline.HeaderStage, pipeline.HeaderReason, pipeline.HeaderError, pipeline.HeaderSourcePartition, pipeline.HeaderSourceOffset} {
			if _, ok := pipeline.HeaderValue(r, h); !ok {
				t.Fatalf("dead letter without %s", h)
			}
		}
	}
	if dlq != bad || badRewardSeen != badRewards {
		t.Fatalf("dead letters: %d events (want %d), %d rewards (want %d)", dlq, bad, badRewardSeen, badRewards)
	}
	var passed, offered uint64
	var rewardSum float64
	for _, cp := range env.ledgers() {
		for _, r := range cp.Reports {
			passed += r.Total.Passed
			offered += r.Total.Offered
			rewardSum += r.Total.Rewards
		}
	}
	rejected := len(got["rejected"])
	t.Logf("%d events: %d passed (%d red, %d blue), %d rejected, %d dead letters; rewards %v",
		n, outputs, len(got["out-red"]), len(got["out-blue"]), rejected, dlq, rewardSum)
	if passed != uint64(outputs) {
		t.Fatalf("ledgers count %d passes, outputs hold %d records", passed, outputs)
	}
	if offered != uint64(outputs+rejected) {
		t.Fatalf("ledgers count %d offered, outputs+rejected hold %d", offered, outputs+rejected)
	}
	if rewardSum != rewards {
		t.Fatalf("ledgers count %v rewards, want %v", rewardSum, rewards)
	}
}

func rewardRecords(n int) (recs []*kgo.Record, sum float64, bad int) {
	for i := range n {
		v := fmt.Sprintf(`{"budget":"a","value":%d}`, i%3)
		if i%40 == 0 {
			v = `{"budget":"a","value":"lots"}`
			bad++
		} else {
			sum += float64(i % 3)
		}
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(fmt.Sprint(i)), Value: []byte(v)})
	}
	return recs, sum, bad
}

func TestEndToEndTwoWorkers(t *testing.T) {
	env := newTestEnv(t)
	const n = 12000
	recs, bad := eventRecords(0, n)
	rewards, rewardSum, badRewards := rewardRecords(200)
	env.produce(append(append([]*kgo.Record(nil), recs[:1000]...), rewards...))

	w1 := env.startWorker(t, "w1")
	w2 := env.startWorker(t, "w2")
	waitReady(t, w1.w)
	waitReady(t, w2.w)
	for i := 1000; i < n; i += 1000 {
		env.produce(recs[i : i+1000])
		// Real time: a trickle over a second or so, so that the
		// controllers tune on the traffic they see.
		time.Sleep(100 * time.Millisecond)
	}

	env.waitCommitted("events")
	env.waitCommitted("clicks")
	checkMetrics(t, w1.w, w2.w)
	w1.stop(t)
	w2.stop(t)
	env.verify(t, n, bad, badRewards, rewardSum)
}

func TestRebalanceStopOneWorker(t *testing.T) {
	env := newTestEnv(t)
	const n = 24000
	recs, bad := eventRecords(0, n)
	env.produce(recs[:n/3])

	w1 := env.startWorker(t, "w1", CommitInterval(50*time.Millisecond))
	w2 := env.startWorker(t, "w2", CommitInterval(50*time.Millisecond))

	// The input keeps arriving while the group changes: the second third
	// while w2 joins, the last while it leaves. Unless w2 has decided
	// events already, the last third waits for w2 to own input partitions,
	// so that w2 has events to decide however slow its join is (under
	// -race on a loaded machine w1 may drain the first two thirds alone,
	// which once failed this test); the last sixth waits for w2 to have
	// decided events, and arrives while w2 leaves.
	w2Decided := make(chan struct{})
	var decided sync.Once
	markDecided := func() { decided.Do(func() { close(w2Decided) }) }
	feed := func(from, to int) {
		for i := from; i < to; i += n / 24 {
			env.produce(recs[i : i+n/24])
			// Real time: a trickle the rebalance runs through.
			time.Sleep(25 * time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	// On a failure below, the feed ends before the environment is torn down.
	defer wg.Wait()
	defer markDecided()
	go func() {
		defer wg.Done()
		feed(n/3, 2*n/3)
		joined := func() bool {
			select {
			case <-w2Decided: // w2 decided events and is leaving
				return true
			default:
				return ownsTopic(w2.w, "events")
			}
		}
		if !testwait.Poll(testwait.Patience, testwait.Tick, joined) {
			t.Errorf("w2 owned no input partition after %v", testwait.Patience)
		}
		feed(2*n/3, 5*n/6)
		<-w2Decided
		feed(5*n/6, n)
	}()
	waitReady(t, w2.w)
	testwait.Eventually(t, "w2 to decide events", func() bool {
		return counterSum(t, w2.w, "throttler_offered_total") > 0
	})
	markDecided()
	w2.stop(t) // mid-run: w1 takes over every partition
	wg.Wait()
	w3 := env.startWorker(t, "w3", CommitInterval(50*time.Millisecond))
	env.waitCommitted("events")
	w1.stop(t)
	w3.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// ownsTopic reports whether w runs a partition of topic.
func ownsTopic(w *Worker, topic string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tp := range w.parts {
		if tp.topic == topic {
			return true
		}
	}
	return false
}

// A stop that comes while the worker starts (checking the connection,
// creating topics, reading the stats topic) is a clean stop: Run returns
// nil, whichever step it interrupted. It once returned that step's
// "context canceled" error.
func TestRunStoppedWhileStarting(t *testing.T) {
	env := newTestEnv(t)
	for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		w := env.newWorker(t, fmt.Sprintf("start-%v", after))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(after)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stopped %v after the start: Run returned %v, want nil", after, err)
			}
		case <-time.After(waitLong):
			t.Fatalf("stopped %v after the start: Run did not return", after)
		}
	}
}

func TestAtLeastOnce(t *testing.T) {
	env := newTestEnv(t)
	const n = 3000
	recs, bad := eventRecords(0, n)
	env.produce(recs)
	w := env.startWorker(t, "alo", WithDelivery(AtLeastOnce))
	env.waitCommitted("events")
	w.stop(t)
	// no crash, so no duplicates either
	env.verify(t, n, bad, 0, 0)
}

func waitReady(t *testing.T, w *Worker) {
	t.Helper()
	testwait.Eventually(t, "the worker's /readyz", func() bool {
		resp, err := http.Get("http://" + w.HTTPAddr().String() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func checkMetrics(t *testing.T, ws ...*Worker) {
	t.Helper()
	var body []byte
	for _, w := range ws {
		resp, err := http.Get("http://" + w.HTTPAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = append(body, b...)
		if resp, err := http.Get("http://" + w.HTTPAddr().String() + "/livez"); err != nil || resp.StatusCode != 200 {
			t.Errorf("/livez: %v %v", resp, err)
		}
	}
	for _, name := range []string{
		"throttler_offered_total", "throttler_passed_total", "throttler_rejected_total", "throttler_routed_total", "throttler_dead_lettered_total",
		"throttler_commits_total", "throttler_consumer_lag", "throttler_stats_view_age_seconds",
		`throttler_kafka_requests_total{request="Fetch"}`, `throttler_kafka_requests_total{request="Produce"}`,
	} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestShareFollowsAssignment checks that every assignment change sets the
// tree's share to the input partitions owned over all input partitions,
// reward partitions left out: one worker owns everything, then two split
// the twelve input partitions (and the four reward partitions, which must
// not count) between them.
func TestShareFollowsAssignment(t *testing.T) {
	env := newTestEnv(t)
	type shares struct {
		mu   sync.Mutex
		last float64
		all  []float64
	}
	start := func(name string) (*runningWorker, *shares) {
		s := &shares{}
		rw := env.startWorkerWith(t, name, func(w *Worker) {
			w.setShare = func(f float64) {
				s.mu.Lock()
				s.last = f
				s.all = append(s.all, f)
				s.mu.Unlock()
			}
		})
		return rw, s
	}
	owned := ownedInputs
	wait := func(what string, ok func() bool) {
		t.Helper()
		testwait.Eventually(t, what, ok)
	}
	get := func(s *shares) float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last
	}

	w1, s1 := start("w1")
	wait("w1 to own every input partition", func() bool { return owned(w1.w) == inputPartitions && get(s1) == 1 })

	w2, s2 := start("w2")
	wait("the shares to split", func() bool {
		o1, o2 := owned(w1.w), owned(w2.w)
		return o1 > 0 && o2 > 0 && o1+o2 == inputPartitions &&
			get(s1) == float64(o1)/inputPartitions && get(s2) == float64(o2)/inputPartitions
	})
	if sum := get(s1) + get(s2); math.Abs(sum-1) > 1e-12 {
		t.Errorf("shares sum to %v, want 1", sum)
	}
	w2.stop(t)
	wait("w1 to own everything again", func() bool { return owned(w1.w) == inputPartitions && get(s1) == 1 })
	s1.mu.Lock()
	for _, f := range s1.all {
		if !(f > 0 && f <= 1) {
			t.Errorf("share %v set, want in (0, 1]", f)
		}
	}
	s1.mu.Unlock()
}

// ownedInputs returns the input partitions w owns.
func ownedInputs(w *Worker) (in int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.parts {
		if !p.reward {
			in++
		}
	}
	return in
}
