package pipeline

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/splitter"
)

// len returns the number of entries a header cache keeps.
func (c *headerCache[K]) len() int { return len(c.cur) + len(c.old) }

// TestRecordsOutputAsOutputRecord checks that Records.Output writes the
// record OutputRecord writes, for every outcome and every kind of header,
// also for plain records whose headers it shares, and that a shared
// header keeps its value when the event's bytes change (the budget of a
// decoded event may be the source record's bytes).
func TestRecordsOutputAsOutputRecord(t *testing.T) {
	src := &kgo.Record{Topic: "in", Partition: 2, Offset: 9, Key: []byte("k"), Value: []byte("v"), Timestamp: time.Unix(5, 0)}
	withHeader := &kgo.Record{Topic: "in", Key: []byte("k"), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}}
	budget := []byte("spring")
	type tc struct {
		name   string
		o      Outcome
		scored bool
		set    func(e *Event)
	}
	cases := []tc{
		{"pass", OutcomePass, false, func(e *Event) {}},
		{"pass scored", OutcomePass, true, func(e *Event) { e.Fields.Score = 2.5 }},
		{"pass with source header", OutcomePass, false, func(e *Event) { e.Record = withHeader }},
		{"pass with stage header", OutcomePass, false, func(e *Event) { e.AddHeader("x-stage", []byte("1")) }},
		{"pass assigned", OutcomePass, false, func(e *Event) {
			e.Assignments = []splitter.Assignment{{Layer: "l", Experiment: "x", Variant: "v", Scheme: "throttler"}}
		}},
		{"reject", OutcomeReject, false, func(e *Event) {}},
		{"reject by parent", OutcomeReject, false, func(e *Event) { e.RejectedBy = "parent" }},
		{"reject scored", OutcomeReject, true, func(e *Event) {}},
		{"dead letter", OutcomeDeadLetter, false, func(e *Event) {
			e.Err = &decode.RecordError{Stage: StageDecode, Reason: decode.ReasonTooLarge}
		}},
	}
	var rs Records
	for round := range 2 { // the second round meets the shared headers
		for _, c := range cases {
			var e Event
			e.Reset(src, time.Unix(6, 0), "in/2")
			e.Fields.Budget = string(budget) // a copy: see below for the record's bytes
			e.Topic, e.RejectedBy, e.RejectReason = "out", "spring", "paced"
			c.set(&e)
			want := OutputRecord(&e, c.o, c.scored)
			got := rs.Output(&e, c.o, c.scored)
			if got.Topic != want.Topic || string(got.Key) != string(want.Key) || string(got.Value) != string(want.Value) ||
				!got.Timestamp.Equal(want.Timestamp) || !sameHeaders(got.Headers, want.Headers) {
				t.Errorf("round %d, %s: got %v, want %v", round, c.name, show(got), show(want))
			}
		}
	}
	// A budget read in place from a buffer that is then reused.
	var e Event
	e.Reset(src, time.Unix(6, 0), "in/2")
	buf := []byte("autumn")
	e.Fields.Budget = bytesconv.String(buf)
	r := rs.Output(&e, OutcomePass, false)
	copy(buf, "winter")
	if v, _ := HeaderValue(r, HeaderBudget); v != "autumn" {
		t.Fatalf("budget header %q after the event's bytes changed, want autumn", v)
	}
}

// TestRecordsManyBudgets checks the shared headers over more budgets than
// a partition keeps.
func TestRecordsManyBudgets(t *testing.T) {
	var rs Records
	src := &kgo.Record{Topic: "in"}
	for round := range 2 {
		for i := range 3 * maxSharedHeaders {
			var e Event
			e.Reset(src, time.Unix(6, 0), "in/0")
			e.Fields.Budget = fmt.Sprintf("b-%d", i)
			e.RejectedBy, e.RejectReason = e.Fields.Budget, "paced"
			o := []Outcome{OutcomePass, OutcomeReject}[i%2]
			r := rs.Output(&e, o, false)
			if v, _ := HeaderValue(r, HeaderBudget); v != e.Fields.Budget {
				t.Fatalf("round %d: budget header %q, want %q", round, v, e.Fields.Budget)
			}
		}
	}
	if n := rs.shared.byPass.len(); n > 2*maxSharedHeaders {
		t.Fatalf("%d shared pass headers kept, at most %d", n, 2*maxSharedHeaders)
	}
}

// TestHeaderCacheKeepsUsed: a key used in every generation stays (its
// headers are the same slice), while the cache stays bounded.
func TestHeaderCacheKeepsUsed(t *testing.T) {
	var c headerCache[string]
	hot, cold := []kgo.RecordHeader{{Key: "k"}}, []kgo.RecordHeader{}
	c.put("hot", hot)
	for i := range 10 * maxSharedHeaders {
		c.put(fmt.Sprint(i), cold)
		if h := c.get("hot"); len(h) != 1 || &h[0] != &hot[0] {
			t.Fatalf("after %d others, hot headers %v", i+1, h)
		}
		if n := c.len(); n > 2*maxSharedHeaders {
			t.Fatalf("%d entries, at most %d", n, 2*maxSharedHeaders)
		}
	}
	if c.get("0") != nil {
		t.Fatal("the oldest cold key is still there")
	}
	if c.get(fmt.Sprint(10*maxSharedHeaders-1)) == nil {
		t.Fatal("the newest cold key is gone")
	}
}

// TestSharedHeadersOwnKeys: a budget or reason read in place from a
// record's bytes, found in the old generation of the shared headers and
// moved to the current one, is kept under a key of the cache's own, not
// over the record's bytes (which would keep the fetch response they came
// in alive, and change when the buffer is reused).
func TestSharedHeadersOwnKeys(t *testing.T) {
	var rs Records
	src := &kgo.Record{Topic: "in"}
	output := func(budget string, o Outcome) *kgo.Record {
		var e Event
		e.Reset(src, time.Unix(6, 0), "in/0")
		e.Fields.Budget = budget
		if o == OutcomeReject {
			e.RejectedBy, e.RejectReason = budget, "paced"
		}
		return rs.Output(&e, o, false)
	}
	for _, o := range []Outcome{OutcomePass, OutcomeReject} {
		output("autumn", o)
		for i := range maxSharedHeaders { // autumn's entry goes to the old generation
			output(fmt.Sprintf("b-%d", i), o)
		}
		buf := []byte("autumn")
		r := output(bytesconv.String(buf), o) // found in the old generation: moved
		copy(buf, "winter")
		if v, _ := HeaderValue(r, HeaderBudget); v != "autumn" {
			t.Fatalf("%v: budget header %q after the event's bytes changed, want autumn", o, v)
		}
		var keys []string
		for k := range rs.shared.byPass.cur {
			keys = append(keys, k)
		}
		for k := range rs.shared.byReject.cur {
			keys = append(keys, k.budget)
		}
		if slices.Contains(keys, "winter") || !slices.Contains(keys, "autumn") {
			t.Fatalf("%v: the current generation's keys are the event's bytes (autumn %v, winter %v)", o,
				slices.Contains(keys, "autumn"), slices.Contains(keys, "winter"))
		}
	}
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool { return x.Key == y.Key && string(x.Value) == string(y.Value) })
}

func show(r *kgo.Record) string {
	s := fmt.Sprintf("%s %q %q %v", r.Topic, r.Key, r.Value, r.Timestamp.Unix())
	for _, h := range r.Headers {
		s += fmt.Sprintf(" %s=%s", h.Key, h.Value)
	}
	return s
}

// BenchmarkOutputInFlight builds the output records of passed and
// rejected events as a partition does and keeps the last inFlight of
// them, as the client does until their promise: it reads a record's
// headers when it is built (the client sizes it) and again when it leaves
// (its encoding and its promise), so that where the records' memory comes
// from shows in the time.
func BenchmarkOutputInFlight(b *testing.B) {
	const inFlight = 20000
	r := &kgo.Record{Topic: "in", Partition: 3, Offset: 7, Key: []byte("user-3"),
		Value: []byte(`{"id":"1-42","user":"user-3","campaign":"spring","score":0.6046602879796196,"ts":1795341600000}`)}
	var e Event
	e.Reset(r, time.Unix(1000, 0), "in/3")
	e.Fields.Budget = "spring"
	e.RejectedBy, e.RejectReason = "spring", "over_budget"
	ring := make([]*kgo.Record, inFlight)
	var rs Records
	size := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o := OutcomePass
		if i%2 == 1 {
			o = OutcomeReject
		}
		out := rs.Output(&e, o, false)
		size += userSize(out)
		k := i % inFlight
		if old := ring[k]; old != nil {
			size += userSize(old)
		}
		ring[k] = out
	}
	if size == 0 {
		b.Fatal("no headers")
	}
}

// userSize is what the client reads of a record to size it.
func userSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
