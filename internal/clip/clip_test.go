package clip

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	short := strings.Repeat("a", Max)
	if String(short) != short || Bytes([]byte(short)) != short {
		t.Fatal("a value of Max bytes is changed")
	}
	long := strings.Repeat("é", 1<<20) // 2 MiB, 2-byte runes
	for _, got := range []string{String(long), Bytes([]byte(long)), Error(errors.New(long))} {
		if len(got) > Max+32 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…(2097152 bytes)") {
			t.Fatalf("clipped to %d bytes (valid UTF-8: %v): ...%q", len(got), utf8.ValidString(got), got[max(len(got)-40, 0):])
		}
	}
	if Error(nil) != "" {
		t.Fatal("Error(nil)")
	}
}
