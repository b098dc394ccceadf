package suite

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

func RunCapsZipfKillWorker(t *testing.T, k BrokerKind) {
	events, rate := EnvInt(t, "THROTTLER_CAPS_EVENTS", 200_000), EnvInt(t, "THROTTLER_CAPS_RATE", 8000)
	const (
		users  = 5000
		burst  = 2
		count  = 5
		period = 10 * time.Second
	)
	brk := SharedCluster(t, k, 12)
	addr, name := brk.Addr, brk.Name
	cfg := WriteFile(t, "worker.yaml", fmt.Sprintf(`brokers: [%s]
group: %s
topics: {input: [%s], output: %s, rejected: %s, partitions: 12}
commit_interval: 100ms
%sfields: {budget: campaign, key: user, id: id, time: ts}
budgets:
  - {name: campaign, target: 1e12, period: 1h}
caps:
  - {name: per-user, burst: %d, rate: %d/%s}
http: {listen: "127.0.0.1:0"}
log: {format: json, level: info}
`, addr, name("capped"), name("events"), name("passed"), name("rejected"),
		k.GroupYAML(GroupTimeouts{Session: 6 * time.Second, Heartbeat: 500 * time.Millisecond, Rebalance: 5 * time.Second, Transaction: 10 * time.Second}),
		burst, count, period))

	gen := Start(t, "loadgen", "loadgen", "--brokers", addr, "--topic", name("events"), "--partitions", "12",
		"--rate", fmt.Sprint(rate), "--count", fmt.Sprint(events), "--budgets", "campaign",
		"--users", fmt.Sprint(users), "--skew", "1.2", "--seed", "11")
	WaitProducing(t, gen, addr, name("events"))
	t0 := time.Now()
	var workers []*Proc
	for i := 0; i < 3; i++ {
		workers = append(workers, Start(t, fmt.Sprintf("worker-%d", i), "run", "--config", cfg))
	}
	killAt := time.Duration(float64(events) / float64(rate) / 3 * float64(time.Second))
	time.Sleep(time.Until(t0.Add(killAt))) // real time: the kill's place in the paced input
	_ = workers[2].Cmd.Process.Signal(syscall.SIGKILL)
	<-workers[2].Done
	t.Logf("worker-2 killed %.1fs after the load began", time.Since(t0).Seconds())

	select {
	case <-gen.Done:
	case <-time.After(time.Duration(2*events/rate)*time.Second + time.Minute):
		t.Fatal("loadgen did not finish")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(addr)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	WaitCommitted(wctx, t, kadm.NewClient(cl), name("capped"), name("events"))
	t.Logf("all events committed %.1fs after the load began", time.Since(t0).Seconds())
	for _, w := range workers[:2] {
		if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.Name, err)
		}
	}

	conn := []kgo.Opt{kgo.SeedBrokers(kafkabroker.Seeds(addr)...)}
	in := ReadCommitted(wctx, t, conn, name("events"))
	// One byte a response: kfake cut every response after its first
	// batch, with no aborted transaction listed for that batch, so every
	// record of an aborted transaction was read (docs/kafka-notes.md; the
	// embedded broker now lists them).
	out := ReadCommitted(wctx, t, append(conn, kgo.FetchMaxBytes(1)), name("passed"), name("rejected"), name("capped.dead-letter"))
	for _, r := range out { // the checks below name the topics without the test's prefix
		r.Topic = strings.TrimPrefix(r.Topic, brk.Prefix)
	}
	if len(in) != events {
		t.Fatalf("input holds %d events, want %d", len(in), events)
	}

	// Every input event in exactly one place.
	input := map[string]CapEvent{}
	for _, r := range in {
		v := gjson.ParseBytes(r.Value)
		input[v.Get("id").String()] = CapEvent{v.Get("user").String(), v.Get("ts").Int()}
	}
	where := map[string]string{}
	capped, otherReject := 0, 0
	var capHeaders *kgo.Record
	first := map[string]*kgo.Record{}
	dups := 0
	for _, r := range out {
		id := gjson.GetBytes(r.Value, "id").String()
		if f, dup := first[id]; dup {
			if dups++; dups <= 5 {
				t.Errorf("event %s twice: %s/%d@%d (%s, ts %v) and %s/%d@%d (%s, ts %v)", id,
					f.Topic, f.Partition, f.Offset, Header(f, "throttler-reason"), f.Timestamp.Format("15:04:05.000"),
					r.Topic, r.Partition, r.Offset, Header(r, "throttler-reason"), r.Timestamp.Format("15:04:05.000"))
			}
			continue
		}
		first[id] = r
		where[id] = r.Topic
		if r.Topic == "rejected" {
			if Header(r, "throttler-reason") == "cap" && Header(r, "throttler-budget") == "per-user" {
				capped++
				capHeaders = r
			} else {
				otherReject++
				where[id] = "rejected-other"
			}
		}
	}
	if dups > 0 {
		t.Errorf("%d events written twice (exactly-once broken)", dups)
		for _, w := range workers {
			w.Err.Mu.Lock()
			for _, l := range w.Err.All {
				if strings.Contains(l, "abort") || strings.Contains(l, "revoked") || strings.Contains(l, "assigned") || strings.Contains(l, "lost") {
					t.Logf("%s: %s", w.Name, l)
				}
			}
			w.Err.Mu.Unlock()
		}
	}
	if len(where) != events {
		t.Errorf("%d of %d events are in the output topics", len(where), events)
	}
	if n := Count3(where, "capped.dead-letter"); n > 0 {
		t.Errorf("%d events dead-lettered", n)
	}

	// The delivered events of each user keep to the cap.
	// Every record of the output topic counts, duplicates included: what
	// a reader of the topic would deliver.
	passed := map[string][]int64{}
	for _, r := range out {
		if r.Topic == "passed" {
			e := input[gjson.GetBytes(r.Value, "id").String()]
			passed[e.User] = append(passed[e.User], e.Ms)
		}
	}
	check, err := flow.NewCap(burst, count, period)
	if err != nil {
		t.Fatal(err)
	}
	violations, maxWin, maxUser, total := 0, 0, "", 0
	for u, ts := range passed {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		total += len(ts)
		for i, ms := range ts {
			if check.Throttle(u, time.UnixMilli(ms), 1).Limited {
				violations++
			}
			// events in [ms, ms+period]
			j := sort.Search(len(ts), func(k int) bool { return ts[k] > ms+period.Milliseconds() })
			if j-i > maxWin {
				maxWin, maxUser = j-i, u
			}
		}
	}
	allowed := count + burst + 1

	// The decisions equal a GCRA replay of the input in partition order
	// (events rejected by the budget, if any, charge nothing).
	replay, _ := flow.NewCap(burst, count, period)
	byPart := map[int32][]*kgo.Record{}
	for _, r := range in {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	mismatch, expected := 0, 0
	for _, rs := range byPart {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
		for _, r := range rs {
			id := gjson.GetBytes(r.Value, "id").String()
			e := input[id]
			if where[id] == "rejected-other" {
				continue
			}
			pass := !replay.Throttle(e.User, time.UnixMilli(e.Ms), 1).Limited
			if pass {
				expected++
			}
			if pass != (where[id] == "passed") {
				mismatch++
			}
		}
	}
	top, topEvents := TopUser(input)
	t.Logf("events %d, users %d, delivered %d, rejected by the cap %d, by the budget %d", len(input), len(PerUser(input)), total, capped, otherReject)
	t.Logf("top user %s: %d events, %d delivered", top, topEvents, len(passed[top]))
	t.Logf("max delivered per user in any %v of event time: %d (%s), allowed %d; GCRA replay of the deliveries: %d refused", period, maxWin, maxUser, allowed, violations)
	t.Logf("replay of the input: %d passes expected, %d decisions differ", expected, mismatch)
	if capHeaders != nil {
		t.Logf("a capped record's headers: limit %s remaining %s retry-after-ms %s reset-after-ms %s",
			Header(capHeaders, "throttler-cap-limit"), Header(capHeaders, "throttler-cap-remaining"),
			Header(capHeaders, "throttler-cap-retry-after-ms"), Header(capHeaders, "throttler-cap-reset-after-ms"))
	}
	if violations > 0 || maxWin > allowed {
		t.Errorf("the cap was broken: %d deliveries refused by the replay, %d in one window (allowed %d)", violations, maxWin, allowed)
	}
	if mismatch > 0 {
		t.Errorf("%d decisions differ from a replay of the input", mismatch)
	}
	if capped == 0 || capHeaders == nil || Header(capHeaders, "throttler-cap-retry-after-ms") == "" {
		t.Errorf("no event was capped (or without headers): the test exercised nothing")
	}
	for _, w := range workers {
		if s, ok := w.Err.Find("input not keyed by the cap key"); ok {
			t.Errorf("%s: %s", w.Name, s)
		}
	}
	if _, ok := workers[0].Err.Find("caps loaded"); !ok {
		t.Errorf("worker-0 logged no caps load")
	}
}

func EnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func Count3(m map[string]string, v string) int {
	n := 0
	for _, x := range m {
		if x == v {
			n++
		}
	}
	return n
}

// CapEvent is an input event as the cap check needs it.
type CapEvent struct {
	User string
	Ms   int64 // event time, Unix ms
}

// PerUser counts the events of each user.
func PerUser(in map[string]CapEvent) map[string]int {
	n := map[string]int{}
	for _, e := range in {
		n[e.User]++
	}
	return n
}

// TopUser returns the user with the most events.
func TopUser(in map[string]CapEvent) (string, int) {
	best, most := "", -1
	for u, n := range PerUser(in) {
		if n > most || n == most && u < best {
			best, most = u, n
		}
	}
	return best, most
}
