package consumer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

func TestPipelineOutcomes(t *testing.T) {
	dec := newTestDecoder(t, KeyPath("user"), ScorePath("score"))
	h := StandardPipeline(dec, nil, "out").Handler()
	now := time.Unix(1000, 0)
	rec := func(v string) *kgo.Record { return &kgo.Record{Topic: "in", Partition: 3, Offset: 7, Value: []byte(v)} }

	pass := &fakeDecider{every: 1}
	rej := &fakeDecider{budget: "summer"}
	e := NewEvent(rec(`{"budget":"spring","user":"u","score":1}`), now, pass, rej)
	if o := Run(h, e); o != OutcomePass || e.Topic != "out" || e.Fields.Score != 1 {
		t.Fatalf("pass: %v %q %+v", o, e.Topic, e.Fields)
	}
	r := outputRecord(e, OutcomePass, e.Topic, true)
	if v, _ := HeaderValue(r, HeaderDecision); v != DecisionPass {
		t.Fatalf("decision header %q", v)
	}
	if v, _ := HeaderValue(r, HeaderBudget); v != "spring" {
		t.Fatalf("budget header %q", v)
	}

	e = NewEvent(rec(`{"budget":"summer","user":"u","score":1}`), now, pass, rej)
	if o := Run(h, e); o != OutcomeReject || e.RejectReason != "paced" || e.RejectedBy != "summer" {
		t.Fatalf("reject: %v %+v", o, e)
	}
	r = outputRecord(e, OutcomeReject, "rejected", true)
	if v, _ := HeaderValue(r, HeaderReason); v != "paced" {
		t.Fatalf("reason header %q", v)
	}

	e = NewEvent(rec(`{"budget":"spring","user":"u","score":-1}`), now, pass, rej)
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err.Reason != ReasonScoreNegative {
		t.Fatalf("dead letter: %v %+v", o, e.Err)
	}
	r = outputRecord(e, OutcomeDeadLetter, "dlq", true)
	for k, want := range map[string]string{
		HeaderStage: StageScore, HeaderReason: string(ReasonScoreNegative), HeaderSourceTopic: "in",
		HeaderSourcePartition: "3", HeaderSourceOffset: "7", HeaderDecision: DecisionDeadLetter,
	} {
		if v, _ := HeaderValue(r, k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}

	// no lane for the budget index
	e = NewEvent(rec(`{"budget":"summer","user":"u","score":1}`), now, pass)
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err.Stage != StageDecide {
		t.Fatalf("missing lane: %v %+v", o, e.Err)
	}
}

func TestPipelineSplitAndUserStages(t *testing.T) {
	dec := newTestDecoder(t, KeyPath("user"))
	p := StandardPipeline(dec, testSplitter(t), "out")
	var order []string
	tag := func(name string) Stage {
		return Stage{name, func(next Handler) Handler {
			return func(e *Event) Outcome {
				order = append(order, name)
				e.AddHeader("x-"+name, []byte("1"))
				return next(e)
			}
		}}
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
	h := p.Handler()
	seen := map[string]int{}
	for i := range 200 {
		key := sprintf("user-%d", i)
		e := NewEvent(&kgo.Record{Topic: "in", Value: []byte(`{"budget":"spring","user":"` + key + `"}`)}, time.Unix(1, 0), &fakeDecider{every: 1})
		if o := Run(h, e); o != OutcomePass {
			t.Fatalf("%v %+v", o, e.Err)
		}
		seen[e.Topic]++
		r := outputRecord(e, OutcomePass, e.Topic, false)
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
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err.Reason != ReasonStagePanic {
		t.Fatalf("%v %+v", o, e.Err)
	}
	h = func(e *Event) Outcome { return OutcomeDeadLetter }
	e = NewEvent(&kgo.Record{Topic: "in"}, time.Now())
	if o := Run(h, e); o != OutcomeDeadLetter || e.Err == nil {
		t.Fatalf("%v %+v", o, e.Err)
	}
}

func BenchmarkPipeline(b *testing.B) {
	dec := newTestDecoder(b, KeyPath("user"), IDPath("id"), ScoreExpr("log(1 + clicks)"))
	h := StandardPipeline(dec, nil, "out").Handler()
	r := &kgo.Record{Topic: "in", Value: []byte(`{"id":"e1","user":"u1","budget":"summer","clicks":3,"ts":1700000000123}`)}
	d := &fakeDecider{every: 2}
	e := NewEvent(r, time.Now(), d, d)
	b.ReportAllocs()
	for b.Loop() {
		e.reset(r, e.Now, e.Source, e.lanes)
		Run(h, e)
	}
}

// BenchmarkProcess runs loadgen-shaped events through the standard
// pipeline and builds the output record of every second one, as the
// partition goroutine does, without a client.
func BenchmarkProcess(b *testing.B) {
	dec, err := NewDecoder([]string{"spring"}, BudgetPath("campaign"), KeyPath("user"), IDPath("id"), TimePath("ts"))
	if err != nil {
		b.Fatal(err)
	}
	h := StandardPipeline(dec, nil, "out").Handler()
	now := time.Unix(1000, 0)
	r := &kgo.Record{Topic: "in", Partition: 3, Offset: 7, Key: []byte("user-3"),
		Value: []byte(`{"id":"1-42","user":"user-3","campaign":"spring","score":0.6046602879796196,"ts":1795341600000}`)}
	lanes := []Decider{&fakeDecider{every: 2}}
	var e Event
	b.ReportAllocs()
	for b.Loop() {
		e.reset(r, now, "in/3", lanes)
		if Run(h, &e) == OutcomePass {
			releaseRecord(outputRecord(&e, OutcomePass, e.Topic, false))
		}
	}
}

// TestEventReset fills every field of an Event with a non-zero value and
// checks that reset leaves only what it must keep: the room of the
// slices and the scan buffer.
func TestEventReset(t *testing.T) {
	var e Event
	v := reflect.ValueOf(&e).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported too
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 4))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.String:
			f.SetString("x")
		case reflect.Struct:
			switch x := f.Addr().Interface().(type) {
			case *time.Time:
				*x = time.Unix(1, 0)
			case *Decoded:
				*x = Decoded{Budget: "b", BudgetIndex: 3, Key: "k", ID: "i", Score: 1, Time: time.Unix(1, 0)}
			case *flow.Verdict:
				*x = flow.Verdict{Pass: true, Reason: flow.ReasonScore, By: "b"}
			default:
				t.Fatalf("field %s of type %s: teach the test to fill it", v.Type().Field(i).Name, f.Type())
			}
		default:
			t.Fatalf("field %s of kind %s: teach the test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	scan := e.scan
	caps := e.caps // the partition's, kept across events
	r := &kgo.Record{}
	now := time.Unix(2, 0)
	lanes := []Decider{&fakeDecider{}}
	e.reset(r, now, "in/0", lanes)
	want := Event{Record: r, Now: now, Source: "in/0", Assignments: e.Assignments[:0], Headers: e.Headers[:0], lanes: lanes, caps: caps, scan: scan, budgets: e.budgets}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("after reset:\n%+v\nwant\n%+v", e, want)
	}
	if cap(e.Assignments) != 4 || cap(e.Headers) != 4 {
		t.Errorf("reset dropped the room of the slices")
	}
}
