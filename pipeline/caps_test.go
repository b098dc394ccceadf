package pipeline

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// scripted decides by a script: pass while *pass is true.
type scripted struct{ pass *bool }

func (s scripted) Decide(time.Time, float64) flow.Verdict {
	if *s.pass {
		return flow.Verdict{Pass: true}
	}
	return flow.Verdict{Reason: flow.ReasonPaced, By: "spring"}
}

func testCapSet(t testing.TB, specs ...CapSpec) *Caps {
	return testCapSetIn(t, prometheus.NewRegistry(), specs...)
}

func testCapSetIn(t testing.TB, reg prometheus.Registerer, specs ...CapSpec) *Caps {
	t.Helper()
	s, err := NewCaps("g.caps", specs, nil, reg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startFrom makes the caps stage of s start every partition from pc
// instead of reading the changelog.
func startFrom(s *Caps, pc *partitionCaps) {
	s.load = func(*Partition) (*partitionCaps, error) { return pc, nil }
}

// capsHandler is the caps stage of s, starting from pc, built for
// partition 0 of "in" and ending in next.
func capsHandler(t testing.TB, s *Caps, pc *partitionCaps, next Handler) Handler {
	t.Helper()
	startFrom(s, pc)
	m, err := s.Stage().New(NewPartition("in", 0, 12))
	if err != nil {
		t.Fatal(err)
	}
	return m(next)
}

var capT0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// capRig runs events of one partition through the standard pipeline with
// caps.
type capRig struct {
	t    *testing.T
	c    *Chain
	pc   *partitionCaps
	pass bool
	off  int64
}

func newCapRig(t *testing.T, parts int, specs ...CapSpec) *capRig {
	r := &capRig{t: t, pass: true}
	s := testCapSet(t, specs...)
	r.pc = s.newPartitionCaps("in/0", 0, parts)
	startFrom(s, r.pc)
	p, err := Standard(Spec{Decoder: newTestDecoder(t, decode.KeyPath("user"), decode.TimePath("ts")), Router: testRouter, Caps: s})
	if err != nil {
		t.Fatal(err)
	}
	if r.c, err = p.Build(withLanes(NewPartition("in", 0, parts), scripted{&r.pass}, scripted{&r.pass})); err != nil {
		t.Fatal(err)
	}
	return r
}

// event runs {"budget":"spring","user":user,"ts":at} (plus extra JSON
// members) at capT0+at.
func (r *capRig) event(user string, at time.Duration, extra string) *Event {
	r.t.Helper()
	v := fmt.Sprintf(`{"budget":"spring","user":%q,"ts":%d%s}`, user, capT0.Add(at).UnixMilli(), extra)
	r.off++
	rec := &kgo.Record{Topic: "in", Partition: 0, Offset: r.off, Key: []byte(user), Value: []byte(v)}
	e := NewEvent(rec, capT0.Add(time.Hour))
	r.c.Run(e)
	return e
}

func (r *capRig) outcome(e *Event) string {
	switch {
	case e.Err != nil:
		return "dead:" + string(e.Err.Reason)
	case e.RejectReason != "":
		return e.RejectReason + ":" + e.RejectedBy
	}
	return "pass"
}

func header(e *Event, key string) string {
	for _, h := range e.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestCapsStageSteps: burst 1, 1 per 10 s (limit 2, one more every 10 s),
// at fixed instants; budget rejections consume nothing.
func TestCapsStageSteps(t *testing.T) {
	r := newCapRig(t, 0, CapSpec{Name: "per-user", Burst: 1, Count: 1, Period: 10 * time.Second})
	steps := []struct {
		at     time.Duration
		user   string
		budget bool // the budget passes it
		want   string
		// headers of a capped event: remaining, retry-after-ms, reset-after-ms
		remaining, retry, reset string
	}{
		{0, "u", true, "pass", "", "", ""},
		{0, "u", false, "paced:spring", "", "", ""}, // not charged
		{0, "u", true, "pass", "", "", ""},
		{0, "u", true, "cap:per-user", "0", "10000", "20000"},
		{0, "v", true, "pass", "", "", ""}, // another key
		{5 * time.Second, "u", true, "cap:per-user", "0", "5000", "15000"},
		{10 * time.Second, "u", true, "pass", "", "", ""},
		{10 * time.Second, "u", true, "cap:per-user", "0", "10000", "20000"},
		{40 * time.Second, "u", false, "paced:spring", "", "", ""},
		{40 * time.Second, "u", false, "paced:spring", "", "", ""},
		{40 * time.Second, "u", true, "pass", "", "", ""}, // full limit again: the rejections took nothing
		{40 * time.Second, "u", true, "pass", "", "", ""},
		{40 * time.Second, "u", true, "cap:per-user", "0", "10000", "20000"},
	}
	for i, s := range steps {
		r.pass = s.budget
		e := r.event(s.user, s.at, "")
		if got := r.outcome(e); got != s.want {
			t.Fatalf("step %d (%v %s): %s, want %s", i, s.at, s.user, got, s.want)
		}
		if s.want != "cap:per-user" {
			if len(e.Headers) != 0 {
				t.Fatalf("step %d: headers %v on a %s", i, e.Headers, s.want)
			}
			continue
		}
		for k, want := range map[string]string{HeaderCap: "per-user", HeaderCapLimit: "2", HeaderCapRemaining: s.remaining,
			HeaderCapRetryAfterMs: s.retry, HeaderCapResetAfterMs: s.reset} {
			if got := header(e, k); got != want {
				t.Errorf("step %d: %s = %q, want %q", i, k, got, want)
			}
		}
		out := OutputRecord(e, OutcomeReject, false)
		if v, _ := HeaderValue(out, HeaderReason); v != ReasonCap {
			t.Errorf("step %d: rejected record's reason %q", i, v)
		}
		if v, _ := HeaderValue(out, HeaderCapRetryAfterMs); v != s.retry {
			t.Errorf("step %d: rejected record's retry-after %q", i, v)
		}
	}
}

// TestCapsStageSeveralCaps: an event refused by a later cap is not charged
// to the earlier ones; quantities and key paths; bad records.
func TestCapsStageSeveralCaps(t *testing.T) {
	r := newCapRig(t, 0,
		CapSpec{Name: "user", Burst: 9, Count: 1, Period: time.Hour},                                         // 10 at once
		CapSpec{Name: "device", KeyPath: "device", QuantityPath: "n", Burst: 2, Count: 1, Period: time.Hour}, // 3 at once
	)
	want := func(e *Event, w string) {
		t.Helper()
		if got := r.outcome(e); got != w {
			t.Fatalf("%s, want %s", got, w)
		}
	}
	want(r.event("u", 0, `,"device":"d1","n":2`), "pass")
	want(r.event("u", 0, `,"device":"d1","n":2`), "cap:device") // d1 has 1 left
	want(r.event("u", 0, `,"device":"d1","n":1`), "pass")
	want(r.event("u", 0, `,"device":"d2","n":4`), "cap:device") // more than the limit: never
	e := r.event("u", 0, `,"device":"d2","n":4`)
	if header(e, HeaderCapRetryAfterMs) != "-1" {
		t.Fatalf("retry-after of an impossible quantity: %q", header(e, HeaderCapRetryAfterMs))
	}
	want(r.event("u", 0, `,"device":"d2","n":0`), "pass") // asks only
	// "u" was charged by the 3 passes only: 7 more fit.
	res := r.pc.caps[0].Throttle("u", capT0, 0)
	if res.Remaining() != 7 {
		t.Fatalf("user cap remaining %d, want 7 (only the 3 passes are charged)", res.Remaining())
	}
	want(r.event("u", 0, `,"n":1`), "dead:"+string(ReasonMissingCapKey))
	want(r.event("u", 0, `,"device":{},"n":1`), "dead:"+string(ReasonCapKeyType))
	want(r.event("u", 0, `,"device":"d3"`), "dead:"+string(ReasonCapQuantity))
	want(r.event("u", 0, `,"device":"d3","n":1.5`), "dead:"+string(ReasonCapQuantity))
	want(r.event("u", 0, `,"device":"d3","n":-1`), "dead:"+string(ReasonCapQuantity))
	want(r.event("u", 0, `,"device":"d3","n":"1"`), "dead:"+string(ReasonCapQuantity))
	want(r.event("", 0, `,"device":"d3","n":1`), "dead:"+string(ReasonMissingCapKey))
	if res := r.pc.caps[0].Throttle("u", capT0, 0); res.Remaining() != 7 {
		t.Fatalf("bad records charged the user cap: remaining %d", res.Remaining())
	}
	if _, ok := r.pc.caps[1].Lookup([]byte("d3")); ok {
		t.Fatal("a bad record charged the device cap")
	}
}

// TestCapsStagePanicUndoes: a panic in a later stage dead-letters the
// event and takes its charge back.
func TestCapsStagePanicUndoes(t *testing.T) {
	s := testCapSet(t, CapSpec{Name: "c", Burst: 0, Count: 1, Period: time.Hour})
	pc := s.newPartitionCaps("in/0", 0, 0)
	h := capsHandler(t, s, pc, func(*Event) Outcome { panic("boom") })
	e := NewEvent(&kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte(`{}`)}, capT0)
	e.Fields.Key, e.Fields.Time = "k", capT0
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err.Reason != decode.ReasonStagePanic {
		t.Fatalf("outcome %v %v", o, e.Err)
	}
	if _, ok := pc.caps[0].Lookup([]byte("k")); ok {
		t.Fatal("the panicked event stayed charged")
	}
}

// TestCapsRollback: an abort returns every key to its committed TAT, the
// keys a sweep removed included.
func TestCapsRollback(t *testing.T) {
	r := newCapRig(t, 0, CapSpec{Name: "c", Burst: 0, Count: 1, Period: time.Minute})
	for _, u := range []string{"a", "b"} {
		r.event(u, 0, "")
	}
	r.pc.committed()
	tatA, _ := r.pc.caps[0].Lookup([]byte("a"))
	// Uncommitted: c is new, a is charged again a minute later, b expires
	// and is swept.
	r.event("c", 70*time.Second, "")
	r.event("a", 70*time.Second, "")
	n := 0
	for range flow.CapShards / sweepShards { // a sweep visits sweepShards shards
		n += r.pc.sweep(capT0.Add(time.Hour))
	}
	if n != 1 {
		t.Fatalf("sweep removed %d keys, want 1 (b)", n)
	}
	if _, ok := r.pc.caps[0].Lookup([]byte("b")); ok {
		t.Fatal("b not swept")
	}
	if got := len(r.pc.dirty[0]); got != 3 {
		t.Fatalf("%d dirty keys, want 3", got)
	}
	r.pc.rollback()
	if got, ok := r.pc.caps[0].Lookup([]byte("a")); !ok || !got.Equal(tatA) {
		t.Fatalf("a after rollback: %v %v, want %v", got, ok, tatA)
	}
	if got, ok := r.pc.caps[0].Lookup([]byte("b")); !ok || !got.Equal(capT0.Add(time.Minute)) {
		t.Fatalf("b after rollback: %v %v", got, ok)
	}
	if _, ok := r.pc.caps[0].Lookup([]byte("c")); ok {
		t.Fatal("c survived the rollback")
	}
	if r.pc.watermark != capT0.UnixNano() || len(r.pc.dirty[0]) != 0 {
		t.Fatalf("watermark %v, dirty %d after rollback", time.Unix(0, r.pc.watermark), len(r.pc.dirty[0]))
	}
	// The replay decides as the first run did.
	if got := r.outcome(r.event("a", 70*time.Second, "")); got != "pass" {
		t.Fatalf("replayed a: %s", got)
	}
}

// TestCapsMisrouted: an event whose key Kafka's default partitioner sends
// elsewhere is counted; one on its own partition is not.
func TestCapsMisrouted(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := testCapSetIn(t, reg, CapSpec{Name: "c", Burst: 100, Count: 1, Period: time.Hour})
	pc := s.newPartitionCaps("in/0", 0, 12)
	startFrom(s, pc)
	p, err := Standard(Spec{Decoder: newTestDecoder(t), Router: testRouter, Caps: s})
	if err != nil {
		t.Fatal(err)
	}
	pass := true
	c, err := p.Build(withLanes(NewPartition("in", 0, 12), scripted{&pass}))
	if err != nil {
		t.Fatal(err)
	}
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	right, wrong := 0, 0
	for i := range 200 {
		key := fmt.Sprint("user-", i)
		home := int32(kp.Partition(&kgo.Record{Key: []byte(key)}, 12))
		part := home
		if i%4 == 0 {
			part = (home + 1) % 12
			wrong++
		} else {
			right++
		}
		rec := &kgo.Record{Topic: "in", Partition: part, Key: []byte(key), Value: []byte(`{"budget":"spring"}`), Timestamp: capT0}
		e := NewEvent(rec, capT0)
		if o := c.Run(e); o != OutcomePass {
			t.Fatalf("event %d: %v %v", i, o, e.Err)
		}
	}
	pc.flushMetrics()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "throttler_cap_misrouted_total" {
			got = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got != float64(wrong) {
		t.Fatalf("misrouted = %v, want %d (of %d)", got, wrong, wrong+right)
	}
}

// BenchmarkCapsStage: the caps stage alone (one cap on the event key, a
// terminal that passes), over 100,000 zipf-distributed users, with a
// commit every 20,000 events; the keying check included.
func BenchmarkCapsStage(b *testing.B) {
	s := testCapSet(b, CapSpec{Name: "c", Burst: 2, Count: 5, Period: 10 * time.Second})
	pc := s.newPartitionCaps("in/0", 0, 12)
	h := capsHandler(b, s, pc, func(*Event) Outcome { return OutcomePass })
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.2, 1, 100_000-1)
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	recs := make([]*kgo.Record, n)
	keys := make([]string, n)
	for i := range recs {
		keys[i] = fmt.Sprint("user-", zipf.Uint64())
		recs[i] = &kgo.Record{Topic: "in", Key: []byte(keys[i]), Value: []byte(`{}`)}
		recs[i].Partition = int32(kp.Partition(recs[i], 12)) // keyed as the cap expects
	}
	e := NewEvent(recs[0], capT0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % n
		e.Record, e.Fields.Key, e.Fields.Time = recs[j], keys[j], capT0.Add(time.Duration(i)*time.Millisecond)
		e.Headers = e.Headers[:0]
		h(e)
		if i%20000 == 19999 {
			pc.committed()
		}
	}
}

// TestCapsChangelog: a commit writes the keys it changed, each once, with
// its TAT; keys that expired are tombstoned (over the commits that sweep
// their shards), and nothing is written for keys left alone.
func TestCapsChangelog(t *testing.T) {
	r := newCapRig(t, 0, CapSpec{Name: "c", Burst: 1, Count: 1, Period: time.Minute})
	type entry struct {
		tat     time.Time
		deleted bool
	}
	commit := func(now time.Time) map[string]entry {
		t.Helper()
		out := map[string]entry{}
		for _, rec := range r.pc.Flush(now) {
			src, c, key, ok := stats.ParseCapKey(rec.Key)
			if !ok || src != "in/0" || c != "c" || rec.Partition != 0 || rec.Topic != "g.caps" {
				t.Fatalf("record %s/%d %q", rec.Topic, rec.Partition, rec.Key)
			}
			if _, dup := out[string(key)]; dup {
				t.Fatalf("key %s written twice in one commit", key)
			}
			e := entry{deleted: rec.Value == nil}
			if !e.deleted {
				tat, err := stats.DecodeCapValue(rec.Value)
				if err != nil {
					t.Fatal(err)
				}
				e.tat = tat
			}
			out[string(key)] = e
		}
		r.pc.Committed()
		return out
	}
	r.event("a", 0, "")
	r.event("a", 0, "")
	r.event("b", time.Second, "")
	got := commit(capT0.Add(time.Hour))
	if len(got) != 2 || !got["a"].tat.Equal(capT0.Add(2*time.Minute)) || !got["b"].tat.Equal(capT0.Add(61*time.Second)) {
		t.Fatalf("first commit wrote %v", got)
	}
	if got := commit(capT0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a commit with no change wrote %v", got)
	}
	// An hour of event time later, c passes; a and b have expired.
	r.event("c", time.Hour, "")
	all := map[string]entry{}
	for range flow.CapShards / sweepShards {
		for k, e := range commit(capT0.Add(2 * time.Hour)) {
			all[k] = e
		}
	}
	if len(all) != 3 || !all["a"].deleted || !all["b"].deleted || all["c"].deleted || r.pc.caps[0].Len() != 1 {
		t.Fatalf("after expiry wrote %v; %d keys held", all, r.pc.caps[0].Len())
	}
}
