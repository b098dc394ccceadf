// Package configerr holds the one sentinel error that every error about a
// configuration wraps, whichever package found it: an option value
// (decode, pipeline, consumer, stats), the experiment layers (splitter),
// the config file (config), the schema registry's settings. Each public
// package exports it under its own name (decode.ErrInvalidConfig,
// stats.ErrInvalidConfig, splitter.ErrInvalidConfig, config.ErrInvalid,
// consumer.ErrInvalidConfig, throttler.ErrInvalidConfig), so that a caller
// tells "the configuration is wrong" from every other failure with one
// errors.Is, whatever it called. It holds nothing else.
package configerr

import "errors"

// ErrInvalid is wrapped by every configuration error.
var ErrInvalid = errors.New("invalid configuration")
