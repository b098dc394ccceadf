package stats

import (
	"errors"
	"testing"
)

func TestSourceName(t *testing.T) {
	s := SourceName("events.v2", 17)
	if s != "events.v2/17" {
		t.Fatalf("SourceName = %q", s)
	}
	topic, p, err := ParseSource(s)
	if err != nil || topic != "events.v2" || p != 17 {
		t.Fatalf("ParseSource = %q, %d, %v", topic, p, err)
	}
	for _, bad := range []string{"", "events", "/3", "events/", "events/-1", "events/x", "events/99999999999"} {
		if _, _, err := ParseSource(bad); !errors.Is(err, ErrInvalidReport) {
			t.Fatalf("ParseSource(%q) err = %v", bad, err)
		}
	}
}
