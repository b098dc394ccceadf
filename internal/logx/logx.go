// Package logx builds the zerolog loggers of the throttler commands, so that
// every command reads the same --log-format and --log-level values the same
// way.
package logx

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// Formats a logger can write.
const (
	// FormatJSON writes one JSON object per line (the default).
	FormatJSON = "json"
	// FormatConsole writes human-readable, uncoloured lines.
	FormatConsole = "console"
)

// Levels, from the most to the least verbose, as accepted by New and
// ParseLevel.
var Levels = []string{"trace", "debug", "info", "warn", "error"}

// Defaults used when a format or level is empty.
const (
	DefaultFormat = FormatJSON
	DefaultLevel  = "info"
)

// ErrFormat is wrapped by the error New returns for an unknown format.
var ErrFormat = errors.New("unknown log format")

// ErrLevel is wrapped by the error New and ParseLevel return for an unknown
// level.
var ErrLevel = errors.New("unknown log level")

// CheckFormat returns nil when format is one New accepts ("" included),
// and an error wrapping ErrFormat otherwise.
func CheckFormat(format string) error {
	switch format {
	case "", FormatJSON, FormatConsole:
		return nil
	}
	return fmt.Errorf("%w %q (want %s or %s)", ErrFormat, format, FormatJSON, FormatConsole)
}

// ParseLevel returns the zerolog level for one of Levels; "" means
// DefaultLevel. Anything else is an error wrapping ErrLevel.
func ParseLevel(level string) (zerolog.Level, error) {
	switch level {
	case "":
		return zerolog.InfoLevel, nil
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info":
		return zerolog.InfoLevel, nil
	case "warn":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("%w %q (want one of trace, debug, info, warn, error)", ErrLevel, level)
}

// New returns a logger writing to w in the given format ("" means JSON) at
// the given level ("" means info), with the time (TimeFormat) on every
// event. The
// logger is safe for concurrent use when w is (os.Stderr is).
func New(w io.Writer, format, level string) (zerolog.Logger, error) {
	if err := CheckFormat(format); err != nil {
		return zerolog.Nop(), err
	}
	lvl, err := ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	if format == FormatConsole {
		w = zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: TimeFormat}
	}
	return zerolog.New(w).Level(lvl).Hook(timestamp{}), nil
}

// TimeFormat is the format of the "time" field of every event: RFC 3339
// in UTC with milliseconds (zerolog's default has whole seconds, and its
// global setting is not ours to change).
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// timestamp adds the time to every event.
type timestamp struct{}

func (timestamp) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(TimeFormat))
}
