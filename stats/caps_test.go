package stats

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestCapRecordRoundTrip(t *testing.T) {
	tat := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	for _, key := range [][]byte{[]byte("user-1"), {0, 1, 0xff, 0}, []byte("a/b\x00c")} {
		r := CapRecord("g.caps", 3, "events/3", "per-user", key, tat, false)
		if r.Topic != "g.caps" || r.Partition != 3 {
			t.Fatalf("record %s/%d", r.Topic, r.Partition)
		}
		src, cp, k, ok := ParseCapKey(r.Key)
		if !ok || src != "events/3" || cp != "per-user" || string(k) != string(key) {
			t.Fatalf("ParseCapKey(%q) = %q %q %q %v", r.Key, src, cp, k, ok)
		}
		got, err := DecodeCapValue(r.Value)
		if err != nil || !got.Equal(tat) {
			t.Fatalf("DecodeCapValue = %v, %v; want %v", got, err, tat)
		}
		if d := CapRecord("g.caps", 3, "events/3", "per-user", key, time.Time{}, true); d.Value != nil || string(d.Key) != string(r.Key) {
			t.Fatalf("tombstone %q %v", d.Key, d.Value)
		}
	}
	for _, bad := range []string{"", "nozero", "\x00cap\x00k", "src\x00\x00k", "src\x00cap"} {
		if _, _, _, ok := ParseCapKey([]byte(bad)); ok {
			t.Errorf("ParseCapKey(%q) accepted", bad)
		}
	}
	v := CapRecord("t", 0, "s/0", "c", []byte("k"), tat, false).Value
	for name, b := range map[string][]byte{
		"empty":          nil,
		"major 2":        append([]byte{2}, v[1:]...),
		"trailing bytes": append(append([]byte(nil), v...), 0),
		"truncated":      v[:len(v)-1],
	} {
		if _, err := DecodeCapValue(b); err == nil {
			t.Errorf("%s: decoded", name)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("%s: %v wraps neither ErrCorrupt nor ErrUnknownVersion", name, err)
		}
	}
	// A later minor version may append fields.
	later := append([]byte{1, 1}, append(v[2:], 7, 7)...)
	if got, err := DecodeCapValue(later); err != nil || !got.Equal(tat) {
		t.Errorf("minor 1 with extra bytes: %v, %v", got, err)
	}
}

// TestLoadCaps: committed records and tombstones are read back in order,
// aborted ones are not, and records of other sources or partitions are
// left out.
func TestLoadCaps(t *testing.T) {
	_, conn := newCluster(t)
	const topic = "g.caps"
	ensure(t, conn, CapTopic(topic, 4))
	ctx := testCtx(t)
	w := newClient(t, conn, kgo.TransactionalID("w"), kgo.RecordPartitioner(LedgerPartitioner(nil, "", topic)))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rec := func(src string, p int32, key string, at time.Duration, deleted bool) *kgo.Record {
		return CapRecord(topic, p, src, "per-user", []byte(key), t0.Add(at), deleted)
	}
	txn(t, w, true, rec("events/2", 2, "a", 1, false), rec("events/2", 2, "b", 2, false), rec("events/3", 3, "a", 9, false))
	txn(t, w, false, rec("events/2", 2, "a", 5, false), rec("events/2", 2, "c", 5, false)) // aborted
	txn(t, w, true, rec("events/2", 2, "b", 0, true), rec("other/2", 2, "z", 1, false))

	state := map[string]time.Time{}
	var order []string
	err := LoadCaps(ctx, conn, topic, map[string]int32{"events/2": 2}, func(e CapEntry) {
		if e.Source != "events/2" || e.Cap != "per-user" {
			t.Errorf("entry of %s/%s", e.Source, e.Cap)
		}
		order = append(order, string(e.Key))
		if e.Deleted {
			delete(state, string(e.Key))
		} else {
			state[string(e.Key)] = e.TAT
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 1 || !state["a"].Equal(t0.Add(1)) || strings.Join(order, ",") != "a,b,b" {
		t.Fatalf("state %v after entries %v; want a at +1ns only, from a,b,b", state, order)
	}

	// An undecodable value is handed over with its error, to skip.
	txn(t, w, true, &kgo.Record{Topic: topic, Partition: 2, Key: rec("events/2", 2, "d", 0, true).Key, Value: []byte{1, 0}})
	var bad []error
	if err := LoadCaps(ctx, conn, topic, map[string]int32{"events/2": 2}, func(e CapEntry) {
		if e.Err != nil {
			bad = append(bad, e.Err)
		}
	}); err != nil || len(bad) != 1 || !errors.Is(bad[0], ErrCorrupt) {
		t.Fatalf("corrupt value: err = %v, entries with errors %v", err, bad)
	}
	if err := LoadCaps(ctx, conn, "missing", map[string]int32{"events/2": 2}, func(CapEntry) {}); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("missing topic: err = %v", err)
	}
}
