package stats

import (
	"errors"
	"testing"
	"time"
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
