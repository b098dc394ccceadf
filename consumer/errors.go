package consumer

import (
	"errors"

	"github.com/throttler/throttler/decode"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error about an option value.
	ErrInvalidConfig = decode.ErrInvalidConfig
	// ErrClosed is returned by Worker.Run when it is called twice.
	ErrClosed = errors.New("worker already ran")
)

// ConfigError names the option whose value is wrong. It wraps
// ErrInvalidConfig.
type ConfigError = decode.ConfigError

// StageReward names the reward path in the RecordError of a reward record
// that goes to the dead-letter topic.
const StageReward = "reward"
