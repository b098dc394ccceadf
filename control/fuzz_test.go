package control

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// FuzzControlRecords reads fuzzed bytes as a batch of control records (a
// key and a value a line, split at the first tab; a line "name\t-" is a
// tombstone), decodes each as the worker does and applies those that
// decode to a flow tree through a State, as internal/controlfeed does. A
// record is anyone's: none may panic, a record that does not decode
// gives an error that wraps ErrInvalidRecord, a definition that decodes
// encodes back to one that decodes the same, and what the tree holds after
// is what the State says is in force.
func FuzzControlRecords(f *testing.F) {
	f.Add([]byte("a\t{\"version\":1,\"name\":\"a\",\"target\":99}\nb\t{\"version\":1,\"name\":\"b\",\"deleted\":true}\n"))
	f.Add([]byte("c\t{\"version\":1,\"name\":\"c\",\"target\":5,\"parent\":\"a\",\"period\":\"1h\"}\nc\t-\n"))
	f.Add([]byte("p\t{\"version\":1,\"name\":\"p\",\"target\":5,\"parent\":\"p\"}\n"))
	f.Add([]byte("a\t{\"version\":1,\"name\":\"a\",\"target\":1e308,\"begin\":\"2026-01-01T00:00:00Z\",\"end\":\"2025-01-01T00:00:00Z\"}\n"))
	f.Add([]byte("r\t{\"version\":1,\"name\":\"r\",\"target\":3,\"kind\":\"rewards\",\"conversion\":0.5,\"reward_delay\":\"10m\"}\n"))
	f.Add([]byte("d\t{\"version\":1,\"name\":\"d\",\"target\":3,\"action\":\"delay\",\"reserve\":\"-1s\"}\n"))
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	base := []flow.Budget{
		{Name: "a", Target: 10, Begin: now.Add(-time.Hour), End: now.Add(time.Hour)},
		{Name: "b", Target: 20, Period: time.Hour},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := flow.NewTree(base)
		if err != nil {
			t.Fatal(err)
		}
		s := NewState(tree.Budget)
		var recs []Record
		for _, line := range bytes.Split(data, []byte("\n")) {
			key, val, ok := bytes.Cut(line, []byte("\t"))
			if !ok {
				continue
			}
			if string(val) == "-" {
				val = nil
			}
			r, err := Decode(key, val)
			if err != nil {
				if !errors.Is(err, ErrInvalidRecord) {
					t.Fatalf("Decode(%q, %q): %v does not wrap ErrInvalidRecord", key, val, err)
				}
				continue
			}
			if r.Op == OpSet {
				k, v, err := EncodeSet(r.Budget)
				if err != nil {
					t.Fatalf("a decoded definition does not encode: %+v: %v", r.Budget, err)
				}
				again, err := Decode(k, v)
				if err != nil || again.Budget.Flow() != r.Budget.Flow() {
					t.Fatalf("a definition encoded again decodes as %+v, %v; want %+v", again.Budget, err, r.Budget)
				}
			}
			recs = append(recs, r)
		}
		accepted, _ := s.ApplyBatch(recs, func(b *Batch) error {
			changes := make([]flow.Change, len(b.Changes()))
			for i, c := range b.Changes() {
				changes[i] = flow.Change(c)
			}
			_, err := tree.Apply(changes, now)
			return err
		})
		for _, r := range accepted {
			want, inForce := s.Budget(r.Name)
			got, inTree := tree.Budget(r.Name)
			if inForce != inTree || (inForce && got != want) {
				t.Fatalf("after %s %q: the tree holds %+v (%v), the State says %+v (%v)", r.Op, r.Name, got, inTree, want, inForce)
			}
		}
	})
}
