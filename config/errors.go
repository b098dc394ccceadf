package config

import (
	"strconv"
	"strings"

	"github.com/throttler/throttler/internal/configerr"
)

// ErrInvalid is wrapped by every Problem, so errors.Is(err, ErrInvalid)
// reports whether Load, Parse, Validate or FlowBudgets rejected a config
// (as opposed to, say, failing to read the file). It is the one sentinel
// of configuration errors: decode.ErrInvalidConfig (and so
// consumer.ErrInvalidConfig) is the same value.
var ErrInvalid = configerr.ErrInvalid

// invalidConfig begins the message of Problems.
const invalidConfig = "invalid config"

// Problem is one thing wrong with a config.
type Problem struct {
	// Path locates the field with its YAML names, for example
	// "budgets[2].end" or "topics.input[0]"; empty for a YAML syntax error.
	Path string
	// Reason says what is wrong, for a human.
	Reason string
	// Line is the 1-based line of the field (or of its closest enclosing
	// field) in the YAML it was parsed from; 0 when unknown.
	Line int
	// File is set when the problem is in a budgets file (budgets_file,
	// ReadBudgets): Line is then the line of that file, and Path the
	// field of that line's budget ("target"), or "" for the line.
	File string
}

// Error formats the problem as "path: reason (line N)"; the line is left
// out when unknown, and "line N: reason" is used when there is no path.
// A problem in a budgets file reads "file:line: path: reason".
func (p Problem) Error() string {
	var b strings.Builder
	switch {
	case p.File != "":
		b.WriteString(p.File)
		b.WriteString(":")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Reason)
	case p.Path != "":
		b.WriteString(p.Path)
		b.WriteString(": ")
		b.WriteString(p.Reason)
		if p.Line > 0 {
			b.WriteString(" (line ")
			b.WriteString(strconv.Itoa(p.Line))
			b.WriteString(")")
		}
	case p.Line > 0:
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
		b.WriteString(p.Reason)
	default:
		b.WriteString(p.Reason)
	}
	return b.String()
}

// Unwrap returns ErrInvalid.
func (p Problem) Unwrap() error { return ErrInvalid }

// Problems is every problem found in a config, in the order of the fields
// they concern. A nil or empty Problems means no problem and is never
// returned as an error.
type Problems []Problem

// Error joins the problems: "invalid config: a: x; b: y".
func (ps Problems) Error() string {
	if len(ps) == 0 {
		return invalidConfig
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return invalidConfig + ": " + strings.Join(msgs, "; ")
}

// Unwrap returns each problem as an error, for errors.Is and errors.As.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// err returns ps as an error, or nil when empty.
func (ps Problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
