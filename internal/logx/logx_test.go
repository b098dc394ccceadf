package logx

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/throttler/throttler/config"
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

// TestConfigNames: the config file accepts exactly the formats and levels
// New does (config keeps its own list, so that it imports no logging).
func TestConfigNames(t *testing.T) {
	for _, f := range config.LogFormats {
		if err := CheckFormat(f); err != nil {
			t.Errorf("config format %q: %v", f, err)
		}
	}
	if want := []string{FormatJSON, FormatConsole}; !slices.Equal(config.LogFormats, want) {
		t.Errorf("config formats %q, logx %q", config.LogFormats, want)
	}
	if !slices.Equal(config.LogLevels, Levels) {
		t.Errorf("config levels %q, logx %q", config.LogLevels, Levels)
	}
}
