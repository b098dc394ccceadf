package logx

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNewJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "", "")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden")
	log.Info().Str("k", "v").Msg("shown")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %q", len(lines), buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if m["message"] != "shown" || m["k"] != "v" || m["level"] != "info" || m["time"] == nil {
		t.Fatalf("unexpected event %v", m)
	}
}

func TestNewConsole(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, FormatConsole, "debug")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hello")
	if s := buf.String(); !strings.Contains(s, "hello") || strings.HasPrefix(s, "{") {
		t.Fatalf("unexpected console output %q", s)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "xml", ""); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("format error = %v", err)
	}
	if _, err := New(&bytes.Buffer{}, "", "loud"); !errors.Is(err, ErrLevel) || !strings.Contains(err.Error(), `"loud"`) {
		t.Fatalf("level error = %v", err)
	}
	for _, l := range Levels {
		if _, err := ParseLevel(l); err != nil {
			t.Errorf("ParseLevel(%q) = %v", l, err)
		}
	}
}
