package pipeline

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/throttler/throttler/decode"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDedupStage steps one stage through ids on two partitions: repeats
// are dead letters naming the first offset, other partitions have their
// own window, a replay from before the first copy (after an aborted
// transaction) passes again, and the window forgets its oldest ids.
func TestDedupStage(t *testing.T) {
	st := DedupStage(3)
	hs := map[int32]Handler{}
	for _, p := range []int32{0, 1} {
		m, err := st.New(NewPartition("in", p, 2))
		if err != nil {
			t.Fatal(err)
		}
		hs[p] = m(func(*Event) Outcome { return OutcomePass })
	}
	steps := []struct {
		part   int32
		offset int64
		id     string
		want   Outcome
		detail string
	}{
		{0, 10, "a", OutcomePass, ""},
		{0, 11, "b", OutcomePass, ""},
		{0, 12, "a", OutcomeDeadLetter, "first seen at offset 10"},
		{1, 5, "a", OutcomePass, ""},  // another partition
		{0, 13, "", OutcomePass, ""},  // no id
		{0, 10, "a", OutcomePass, ""}, // replay of the first copy
		{0, 11, "b", OutcomePass, ""},
		{0, 12, "a", OutcomeDeadLetter, "first seen at offset 10"},
		{0, 14, "c", OutcomePass, ""},
		{0, 15, "d", OutcomePass, ""}, // window of 3: "a" is forgotten
		{0, 16, "a", OutcomePass, ""},
		{0, 17, "d", OutcomeDeadLetter, "first seen at offset 15"},
		{0, 18, "b", OutcomePass, ""}, // "b" went when "a" came back
	}
	for i, s := range steps {
		e := NewEvent(&kgo.Record{Topic: "in", Partition: s.part, Offset: s.offset}, time.Time{})
		e.Fields.ID = s.id
		got := hs[s.part](e)
		if got != s.want {
			t.Fatalf("step %d (%+v): %v", i, s, got)
		}
		if got == OutcomeDeadLetter && (e.Err.Reason != ReasonDuplicateID || e.Err.Stage != StageDedup || e.Err.Detail != s.detail) {
			t.Fatalf("step %d: error %+v, want %s", i, e.Err, s.detail)
		}
	}
}

// TestDedupNeedsID checks the standard pipeline's check.
func TestDedupNeedsID(t *testing.T) {
	dec, err := decode.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Standard(Spec{Decoder: dec, Router: testRouter, DedupWindow: 10}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("DedupWindow without IDPath: %v", err)
	}
}

// BenchmarkDedupStage measures the stage on fresh ids (one remembered and
// one forgotten per event, the window full) and on repeats.
func BenchmarkDedupStage(b *testing.B) {
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = "event-" + strconv.Itoa(i)
	}
	for _, bc := range []struct {
		name   string
		window int
		mod    int
	}{{"fresh-ids-window-10000", 10000, len(ids)}, {"repeats", 1 << 17, 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := DedupStage(bc.window).New(NewPartition("in", 0, 1))
			if err != nil {
				b.Fatal(err)
			}
			h := m(func(*Event) Outcome { return OutcomePass })
			e := NewEvent(&kgo.Record{Topic: "in"}, time.Time{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e.Record.Offset = int64(i)
				e.Fields.ID = ids[i%bc.mod]
				h(e)
				i++
			}
		})
	}
}
