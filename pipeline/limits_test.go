package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStateKeyBounded checks that cap keys and dedup ids longer than
// MaxStateKeyBytes are kept as their digests: a cap holds 72 bytes for a
// 16 KiB key and still caps it exactly (the same key is capped, a key
// differing in its last byte is not), and the dedup window refuses a
// repeated long id.
func TestStateKeyBounded(t *testing.T) {
	long := strings.Repeat("k", 16<<10) // under the record key limit (decode.MaxKeyAndHeaderBytes)
	other := long[:len(long)-1] + "j"
	r := newCapRig(t, 0, CapSpec{Name: "per-user", Burst: 0, Count: 1, Period: time.Hour})
	for i, c := range []struct {
		user, want string
	}{{long, "pass"}, {long, "cap:per-user"}, {other, "pass"}, {"short", "pass"}} {
		if got := r.outcome(r.event(c.user, 0, "")); got != c.want {
			t.Fatalf("event %d: %s, want %s", i, got, c.want)
		}
	}
	keys := 0
	for k := range r.pc.caps[0].All() {
		keys++
		if len(k) > MaxStateKeyBytes {
			t.Fatalf("the cap keeps a key of %d bytes", len(k))
		}
	}
	if keys != 3 {
		t.Fatalf("%d keys kept, want 3", keys)
	}

	m, err := DedupStage(10).New(NewPartition("in", 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	h := m(func(*Event) Outcome { return OutcomePass })
	for i, c := range []struct {
		id   string
		want Outcome
	}{{long, OutcomePass}, {other, OutcomePass}, {long, OutcomeDeadLetter}} {
		e := NewEvent(&kgo.Record{Topic: "in", Offset: int64(i)}, time.Time{})
		e.Fields.ID = c.id
		if got := h(e); got != c.want {
			t.Fatalf("id %d: %v, want %v", i, got, c.want)
		}
	}
	if got := StateKey([]byte(long)); len(got) != 72 || !strings.HasPrefix(string(got), "#sha256:") {
		t.Fatalf("StateKey = %q", got)
	}
}
