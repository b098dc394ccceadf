package splitter

import (
	"strings"

	"github.com/throttler/throttler/internal/configerr"
)

// ErrInvalidConfig is wrapped by every configuration problem: for an error
// err returned by New, errors.Is(err, ErrInvalidConfig) reports whether the
// layers were rejected. It is the one sentinel of configuration errors
// (decode.ErrInvalidConfig is the same value).
var ErrInvalidConfig = configerr.ErrInvalid

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Path locates the offending field with the YAML names of the
	// configuration types, rooted at "layers", for example
	// "layers[0].experiments[1].variants[2].weight". A product that embeds
	// the layers under another key can replace that root.
	Path string
	// Reason says what is wrong, for a human.
	Reason string
}

func (p *Problem) Error() string { return p.Path + ": " + p.Reason }

// Unwrap returns ErrInvalidConfig.
func (p *Problem) Unwrap() error { return ErrInvalidConfig }

// Problems is every problem found in a configuration, layer by layer in
// configuration order. As an error it wraps each Problem, and through them
// ErrInvalidConfig; a nil or empty Problems means the configuration is valid
// (and must not be returned as an error).
type Problems []*Problem

func (ps Problems) Error() string {
	var b strings.Builder
	b.WriteString("invalid splitter config")
	for i, p := range ps {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems as errors, for errors.Is and errors.As.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}
