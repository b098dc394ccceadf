package stats

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func sampleWorker() WorkerStatus {
	return WorkerStatus{
		Worker: "demo-1a2b", At: t0, Started: t1, SyncInterval: time.Second,
		Commits: 1234, Aborted: 3, DeadLetters: 17,
		Sources: []SourceStatus{
			{Source: "events/1", Lag: 0, Offset: 5000, Committed: t0.Add(-time.Second)},
			{Source: "clicks/1", Lag: 12, Offset: -1}, // never committed: zero time
		},
		Parked: []ParkedSource{{Source: "events/9", Reason: "ledger corrupt"}, {Source: "events/2", Reason: "offset beyond end"}},
	}
}

func TestWorkerStatusRoundTrip(t *testing.T) {
	ws := sampleWorker()
	pub, _ := NewPublisher("stats")
	r, err := pub.WorkerRecord(ws)
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != "stats" || r.Key[0] != byte(KindWorker) || KindWorker.String() != "worker status" {
		t.Fatalf("record %+v", r)
	}
	got, err := DecodeRecord(r.Key, r.Value)
	if err != nil || got.Kind != KindWorker || got.Deleted {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	want := ws
	want.Sources = []SourceStatus{ws.Sources[1], ws.Sources[0]} // sorted
	want.Parked = []ParkedSource{ws.Parked[1], ws.Parked[0]}
	if !reflect.DeepEqual(got.Worker, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got.Worker, want)
	}

	// A tombstone carries the identity only.
	got, err = DecodeRecord(r.Key, nil)
	if err != nil || !got.Deleted || got.Worker.Worker != ws.Worker || got.Worker.Sources != nil {
		t.Fatalf("tombstone %+v, %v", got, err)
	}

	// A newer minor's trailing fields are skipped; in 1.0 they are corrupt;
	// another major is refused.
	newer := append([]byte{workerMajor, workerMinor + 1}, append(r.Value[2:], 0xee)...)
	if got, err := DecodeRecord(r.Key, newer); err != nil || got.Worker.Commits != 1234 {
		t.Fatalf("newer minor: %+v, %v", got, err)
	}
	if _, err := DecodeRecord(r.Key, append(r.Value[:len(r.Value):len(r.Value)], 0xee)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte in 1.1: %v", err)
	}
	other := append([]byte{workerMajor + 1}, r.Value[1:]...)
	if _, err := DecodeRecord(r.Key, other); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("major 2: %v", err)
	}
	// Every truncation fails cleanly.
	for n := range len(r.Value) {
		if _, err := DecodeRecord(r.Key, r.Value[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("value cut to %d bytes: %v", n, err)
		}
	}
}

func TestWorkerStatusRejectsBadInput(t *testing.T) {
	ws := sampleWorker()
	ws.Worker = ""
	if _, _, err := EncodeWorkerStatus(ws); !errors.Is(err, ErrInvalidReport) {
		t.Errorf("empty worker: %v", err)
	}
	ws = sampleWorker()
	ws.Sources = append(ws.Sources, ws.Sources[0])
	if _, _, err := EncodeWorkerStatus(ws); !errors.Is(err, ErrInvalidReport) {
		t.Errorf("source twice: %v", err)
	}
	ws.Sources = []SourceStatus{{Source: ""}}
	if _, _, err := EncodeWorkerStatus(ws); !errors.Is(err, ErrInvalidReport) {
		t.Errorf("empty source: %v", err)
	}
	// Sources out of order in the bytes.
	k, v, err := EncodeWorkerStatus(sampleWorker())
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.Replace(string(v), "clicks/1", "zzzzzz/1", 1)
	if _, err := DecodeRecord(k, []byte(swapped)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("sources out of order: %v", err)
	}
	// Figures readers would sum or multiply, out of range.
	for i, change := range []func(*WorkerStatus){
		func(ws *WorkerStatus) { ws.SyncInterval = -time.Second },
		func(ws *WorkerStatus) { ws.SyncInterval = 1000 * time.Hour },
		func(ws *WorkerStatus) { ws.Commits = MaxCount + 1 },
		func(ws *WorkerStatus) { ws.Sources[0].Lag = math.MaxInt64 },
		func(ws *WorkerStatus) { ws.Sources[0].Offset = -5 },
	} {
		ws := sampleWorker()
		change(&ws)
		k, v, err := EncodeWorkerStatus(ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeRecord(k, v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("change %d: %v, want ErrCorrupt", i, err)
		}
	}
}

// TestWorkerStatusBounded: a worker owning more sources than fit in
// MaxWorkerStatusBytes publishes the first ones by name and counts the
// rest in Omitted.
func TestWorkerStatusBounded(t *testing.T) {
	ws := WorkerStatus{Worker: "w", At: t0, Omitted: 2}
	for i := range 5000 {
		ws.Sources = append(ws.Sources, SourceStatus{Source: fmt.Sprintf("a-rather-long-input-topic-name/%04d", i), Lag: 1 << 40, Offset: 1 << 50, Committed: t0})
	}
	k, v, err := EncodeWorkerStatus(ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > MaxWorkerStatusBytes {
		t.Fatalf("value of %d bytes, bound %d", len(v), MaxWorkerStatusBytes)
	}
	got, err := DecodeRecord(k, v)
	if err != nil {
		t.Fatal(err)
	}
	n := len(got.Worker.Sources)
	if n < 1000 || n+got.Worker.Omitted != 5000+2 || got.Worker.Sources[n-1].Source != ws.Sources[n-1].Source {
		t.Fatalf("kept %d sources, omitted %d, last %q", n, got.Worker.Omitted, got.Worker.Sources[n-1].Source)
	}
	t.Logf("%d of 5000 sources in %d bytes", n, len(v))
}

// TestViewWorkers: a View keeps the newest status of every worker and
// forgets one on its tombstone.
func TestViewWorkers(t *testing.T) {
	_, conn := newCluster(t)
	ensure(t, conn, StatsTopic("stats", 3))
	pub, _ := NewPublisher("stats")
	rec := func(ws WorkerStatus) *kgo.Record {
		t.Helper()
		r, err := pub.WorkerRecord(ws)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := sampleWorker(), sampleWorker()
	b.Worker, b.Commits = "demo-0000", 1
	newer := a
	newer.At, newer.Commits = t0.Add(time.Second), 1300
	cl := newClient(t, conn)
	produceSync(t, cl, rec(a), rec(b), rec(newer))
	v := newView(t, conn, "stats")
	if err := v.WaitCaughtUp(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ws := v.Workers()
	if len(ws) != 2 || ws[0].Worker != "demo-0000" || ws[1].Worker != "demo-1a2b" || ws[1].Commits != 1300 || len(ws[1].Sources) != 2 {
		t.Fatalf("workers %+v", ws)
	}
	k, _ := WorkerKey("demo-0000")
	produceSync(t, cl, pub.TombstoneKey(k))
	waitFor(t, "tombstone applied", func() bool {
		ws := v.Workers()
		return len(ws) == 1 && ws[0].Worker == "demo-1a2b"
	})
	if len(v.BudgetDefs()) != 0 || len(v.Budgets()) != 0 {
		t.Errorf("worker records leaked into budgets: %v %v", v.BudgetDefs(), v.Budgets())
	}
}
