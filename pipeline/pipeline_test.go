package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// fakeDecider passes every n-th event and rejects the others as paced.
type fakeDecider struct {
	every, seen int
	budget      string
}

func (f *fakeDecider) Decide(time.Time, float64) flow.Verdict {
	f.seen++
	if f.every > 0 && f.seen%f.every == 0 {
		return flow.Verdict{Pass: true}
	}
	return flow.Verdict{Reason: flow.ReasonPaced, By: f.budget}
}

func testSplitter(t *testing.T) *splitter.Splitter {
	t.Helper()
	sp, err := splitter.New([]splitter.Layer{{
		Name: "ui",
		Experiments: []splitter.Experiment{{
			Name: "color", Start: 0, Allocation: 100,
			Variants: []splitter.Variant{{Name: "red", Weight: 1, Topic: "out-red"}, {Name: "blue", Weight: 1, Topic: "out-blue"}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

var testBudgets = []string{"spring", "summer"}

func newTestDecoder(t testing.TB, opts ...decode.Opt) *decode.Decoder {
	t.Helper()
	d, err := decode.NewDecoder(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testRouter is the destinations of the tests.
var testRouter = Router{Output: "out", Rejected: "rejected", DeadLetter: "dlq"}

// standard returns the standard pipeline of dec and sp.
func standard(t testing.TB, dec *decode.Decoder, sp *splitter.Splitter) *Pipeline {
	t.Helper()
	p, err := Standard(Spec{Decoder: dec, Splitter: sp, Router: testRouter})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// withLanes gives part its deciders by budget: lanes[i] decides the
// events of testBudgets[i]; the other budgets have none.
func withLanes(part *Partition, lanes ...Decider) *Partition {
	part.SetLanes(func(budget string, _ time.Time) Decider {
		for i, l := range lanes {
			if testBudgets[i] == budget {
				return l
			}
		}
		return nil
	}, nil)
	return part
}

// chain builds p for partition 3 of "in" with lanes by budget (withLanes).
func chain(t testing.TB, p *Pipeline, lanes ...Decider) *Chain {
	t.Helper()
	c, err := p.Build(withLanes(NewPartition("in", 3, 0), lanes...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPipelineOutcomes(t *testing.T) {
	dec := newTestDecoder(t, decode.KeyPath("user"), decode.ScorePath("score"))
	p := standard(t, dec, nil)
	now := time.Unix(1000, 0)
	rec := func(v string) *kgo.Record { return &kgo.Record{Topic: "in", Partition: 3, Offset: 7, Value: []byte(v)} }

	pass := &fakeDecider{every: 1}
	rej := &fakeDecider{budget: "summer"}
	c := chain(t, p, pass, rej)
	e := NewEvent(rec(`{"budget":"spring","user":"u","score":1}`), now)
	if o := c.Run(e); o != OutcomePass || e.Topic != "out" || e.Fields.Score != 1 {
		t.Fatalf("pass: %v %q %+v", o, e.Topic, e.Fields)
	}
	r := OutputRecord(e, OutcomePass, true)
	if v, _ := HeaderValue(r, HeaderDecision); v != DecisionPass {
		t.Fatalf("decision header %q", v)
	}
	if v, _ := HeaderValue(r, HeaderBudget); v != "spring" {
		t.Fatalf("budget header %q", v)
	}

	e = NewEvent(rec(`{"budget":"summer","user":"u","score":1}`), now)
	if o := c.Run(e); o != OutcomeReject || e.RejectReason != "paced" || e.RejectedBy != "summer" || e.Topic != "rejected" {
		t.Fatalf("reject: %v %+v", o, e)
	}
	r = OutputRecord(e, OutcomeReject, true)
	if v, _ := HeaderValue(r, HeaderReason); v != "paced" {
		t.Fatalf("reason header %q", v)
	}

	e = NewEvent(rec(`{"budget":"spring","user":"u","score":-1}`), now)
	if o := c.Run(e); o != OutcomeDeadLetter || e.Err.Reason != decode.ReasonScoreNegative || e.Topic != "dlq" {
		t.Fatalf("dead letter: %v %+v", o, e.Err)
	}
	r = OutputRecord(e, OutcomeDeadLetter, true)
	for k, want := range map[string]string{
		HeaderStage: StageScore, HeaderReason: string(decode.ReasonScoreNegative), HeaderSourceTopic: "in",
		HeaderSourcePartition: "3", HeaderSourceOffset: "7", HeaderDecision: DecisionDeadLetter,
	} {
		if v, _ := HeaderValue(r, k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}

	// no lane for the budget index
	e = NewEvent(rec(`{"budget":"summer","user":"u","score":1}`), now)
	if o := chain(t, p, pass).Run(e); o != OutcomeDeadLetter || e.Err.Stage != StageDecide {
		t.Fatalf("missing lane: %v %+v", o, e.Err)
	}
}

func TestPipelineSplitAndUserStages(t *testing.T) {
	dec := newTestDecoder(t, decode.KeyPath("user"))
	p := standard(t, dec, testSplitter(t))
	var order []string
	tag := func(name string) Stage {
		return Func(name, func(next Handler) Handler {
			return func(e *Event) Outcome {
				order = append(order, name)
				e.AddHeader("x-"+name, []byte("1"))
				return next(e)
			}
		})
	}
	if err := p.Insert(StageDecide, tag("before-decide")); err != nil {
		t.Fatal(err)
	}
	p.Use(tag("last"))
	if err := p.Insert("nope", tag("x")); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Insert unknown: %v", err)
	}
	want := []string{StageDecode, StageScore, StageCaps, "before-decide", StageDecide, StageSplit, "last"}
	if got := p.Names(); len(got) != len(want) {
		t.Fatalf("names %v", got)
	}
	c := chain(t, p, &fakeDecider{every: 1})
	seen := map[string]int{}
	for i := range 200 {
		key := fmt.Sprintf("user-%d", i)
		e := NewEvent(&kgo.Record{Topic: "in", Value: []byte(`{"budget":"spring","user":"` + key + `"}`)}, time.Unix(1, 0))
		if o := c.Run(e); o != OutcomePass {
			t.Fatalf("%v %+v", o, e.Err)
		}
		seen[e.Topic]++
		r := OutputRecord(e, OutcomePass, false)
		l, _ := HeaderValue(r, HeaderLayer)
		x, _ := HeaderValue(r, HeaderExperiment)
		v, _ := HeaderValue(r, HeaderVariant)
		if l != "ui" || x != "color" || "out-"+v != e.Topic {
			t.Fatalf("assignment headers %q %q %q topic %q", l, x, v, e.Topic)
		}
		if _, ok := HeaderValue(r, "x-last"); !ok {
			t.Fatal("user header missing")
		}
	}
	if seen["out-red"] < 50 || seen["out-blue"] < 50 {
		t.Fatalf("split %v", seen)
	}
	if len(order) != 400 || order[0] != "before-decide" || order[1] != "last" {
		t.Fatalf("order %v", order[:2])
	}
}

func TestRunRecoversPanics(t *testing.T) {
	h := Handler(func(e *Event) Outcome { panic("boom") })
	e := NewEvent(&kgo.Record{Topic: "in"}, time.Now())
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err.Reason != decode.ReasonStagePanic {
		t.Fatalf("%v %+v", o, e.Err)
	}
	h = func(e *Event) Outcome { return OutcomeDeadLetter }
	e = NewEvent(&kgo.Record{Topic: "in"}, time.Now())
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err == nil {
		t.Fatalf("%v %+v", o, e.Err)
	}
}

func BenchmarkPipeline(b *testing.B) {
	dec := newTestDecoder(b, decode.KeyPath("user"), decode.IDPath("id"), decode.ScoreExpr("log(1 + clicks)"))
	d := &fakeDecider{every: 2}
	c := chain(b, standard(b, dec, nil), d, d)
	r := &kgo.Record{Topic: "in", Value: []byte(`{"id":"e1","user":"u1","budget":"summer","clicks":3,"ts":1700000000123}`)}
	e := NewEvent(r, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(r, e.Now, e.Source)
		c.Run(e)
	}
}

// BenchmarkProcess runs loadgen-shaped events through the standard
// pipeline and builds the output record of every second one, as the
// partition goroutine does, without a client.
func BenchmarkProcess(b *testing.B) {
	dec, err := decode.NewDecoder(decode.BudgetPath("campaign"), decode.KeyPath("user"), decode.IDPath("id"), decode.TimePath("ts"))
	if err != nil {
		b.Fatal(err)
	}
	c := chain(b, standard(b, dec, nil), &fakeDecider{every: 2})
	now := time.Unix(1000, 0)
	r := &kgo.Record{Topic: "in", Partition: 3, Offset: 7, Key: []byte("user-3"),
		Value: []byte(`{"id":"1-42","user":"user-3","campaign":"spring","score":0.6046602879796196,"ts":1795341600000}`)}
	var e Event
	var rs Records
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(r, now, "in/3")
		if c.Run(&e) == OutcomePass {
			rs.Output(&e, OutcomePass, false)
		}
	}
}

// TestEventReset fills every field of an Event with a non-zero value and
// checks that reset leaves only what it must keep: the room of the
// slices.
func TestEventReset(t *testing.T) {
	var e Event
	v := reflect.ValueOf(&e).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 4))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			switch x := f.Addr().Interface().(type) {
			case *time.Time:
				*x = time.Unix(1, 0)
			case *decode.Decoded:
				*x = decode.Decoded{Budget: "b", Key: "k", ID: "i", Score: 1, Time: time.Unix(1, 0)}
			case *flow.Verdict:
				*x = flow.Verdict{Pass: true, Reason: flow.ReasonScore, By: "b"}
			default:
				t.Fatalf("field %s of type %s: teach the test to fill it", v.Type().Field(i).Name, f.Type())
			}
		default:
			t.Fatalf("field %s of kind %s: teach the test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	r := &kgo.Record{}
	now := time.Unix(2, 0)
	e.Reset(r, now, "in/0")
	want := Event{Record: r, Now: now, Source: "in/0", Assignments: e.Assignments[:0], Headers: e.Headers[:0]}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("after reset:\n%+v\nwant\n%+v", e, want)
	}
	if cap(e.Assignments) != 4 || cap(e.Headers) != 4 {
		t.Errorf("reset dropped the room of the slices")
	}
}
