package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
)

// Defaults of Config.
const (
	DefaultRecords    = 1_000_000
	DefaultRounds     = 3
	DefaultPartitions = 12
	// DefaultSyncInterval is the pipeline's sync interval: a tenth of the
	// worker's default, so that the controllers settle within a run of a
	// second or two.
	DefaultSyncInterval = 100 * time.Millisecond
	// DefaultStreamsWarmup is Config.StreamsWarmup's default.
	DefaultStreamsWarmup = 3
	// roundTimeout bounds one round.
	roundTimeout = 5 * time.Minute
	// observeEvery is the period of the committed-offsets observer.
	observeEvery = 5 * time.Millisecond
)

// ErrConfig is wrapped by the error Run returns for an invalid Config.
var ErrConfig = errors.New("invalid bench config")

// Config says what to measure.
type Config struct {
	// Records is the number of input records. Default DefaultRecords.
	Records int
	// Delivery is the delivery mode of every side. Default exactly-once.
	Delivery consumer.Delivery
	// Rounds is the number of rounds of each side. Default DefaultRounds.
	Rounds int
	// Partitions of the input and output topics. Default
	// DefaultPartitions.
	Partitions int32
	// Brokers are the seed brokers of a broker in another process (Apache
	// Kafka, or `throttler broker`). Default none: Run starts an embedded
	// broker (kfake) in its own process, whose CPU then counts in every
	// Go side's.
	Brokers []string
	// DataDir is the embedded broker's data directory. Default: a
	// temporary directory, removed at the end (records kept in memory
	// with no retention would grow the broker and slow it down round
	// after round). Unused with Brokers.
	DataDir string
	// DropRejected makes the pipeline drop rejected events (counted, not
	// produced), as `throttler bench` did before it had a rejected topic:
	// the pipeline then produces only the passed half of what the
	// passthrough does. Default false: every record is produced somewhere.
	DropRejected bool
	// SyncInterval is the pipeline's sync interval (consumer.SyncInterval
	// and flow.SyncInterval). The work per sync (reading the peers of the
	// active controllers, releasing idle lanes, the gauges) grows with
	// the active budgets, and lanes idle for three sync intervals close:
	// with many budgets, the figures depend on it.
	// Default DefaultSyncInterval.
	SyncInterval time.Duration
	// Budgets is the number of budgets over the input. Default 1.
	Budgets int
	// Skew is the Zipf exponent (> 1) of the budgets' ranks, or 0 for a
	// uniform draw; used with Budgets > 1. Default 0 (a Config built in
	// code); `throttler bench` passes loadgen.DefaultSkew.
	Skew float64
	// DecodeReference adds a side to every round, after the passthrough:
	// the passthrough that also decodes every record with the pipeline's
	// decoder (each poll's records on GOMAXPROCS goroutines, then copied).
	// It measures what decoding alone costs, in the same run:
	// Result.DecodeRPS and DecodeRatio.
	DecodeReference bool
	// OneBudgetReference adds a side to every round, after the pipeline:
	// the pipeline with one budget, on an input of its own whose events
	// all name it (with Budgets > 1: what many budgets cost, in the same
	// run; Result.OneBudgetRPS and BudgetsRatio).
	OneBudgetReference bool
	// StreamsReference adds a side to every round, last: the Kafka
	// Streams application of the streams directory, built once with
	// Maven and run in one JVM for every round (streams.go). Without
	// Java or Maven the side is skipped and Result.StreamsSkipped says
	// why.
	StreamsReference bool
	// StreamsWarmup is the number of unmeasured passes of the Streams
	// reference over the input before the rounds (Default
	// DefaultStreamsWarmup; negative: none): the JVM compiles its hot code
	// and sizes its heap while it runs, and its rate still rose over the
	// first several passes.
	StreamsWarmup int
	// StreamsCache is the directory the Streams reference is built in.
	// Default: the user's cache directory's throttler/bench-streams-HASH.
	StreamsCache string
	// CPUProfile, when set, receives a CPU profile of the last pipeline
	// round.
	CPUProfile io.Writer
	// PassthroughProfile, when set, receives a CPU profile of the last
	// passthrough round (to compare like with like).
	PassthroughProfile io.Writer
	// Log receives progress at info level. Default: none.
	Log zerolog.Logger
	// Format of the input: json, avro or protobuf (through a schema
	// registry in the process). Default json.
	Format string
}

// defaults fills in the zero fields and checks the others.
func (c *Config) defaults() error {
	if c.Records == 0 {
		c.Records = DefaultRecords
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Budgets == 0 {
		c.Budgets = 1
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	switch {
	case c.StreamsWarmup == 0:
		c.StreamsWarmup = DefaultStreamsWarmup
	case c.StreamsWarmup < 0:
		c.StreamsWarmup = 0
	}
	switch {
	case c.Records < 1:
		return fmt.Errorf("%w: records must be at least 1, got %d", ErrConfig, c.Records)
	case c.Rounds < 1:
		return fmt.Errorf("%w: rounds must be at least 1, got %d", ErrConfig, c.Rounds)
	case c.Partitions < 1:
		return fmt.Errorf("%w: partitions must be at least 1, got %d", ErrConfig, c.Partitions)
	case c.SyncInterval < time.Millisecond:
		return fmt.Errorf("%w: sync interval must be at least 1ms, got %v", ErrConfig, c.SyncInterval)
	case c.Budgets < 1:
		return fmt.Errorf("%w: budgets must be at least 1, got %d", ErrConfig, c.Budgets)
	case c.Skew != 0 && !(c.Skew > 1) || math.IsInf(c.Skew, 0):
		return fmt.Errorf("%w: skew must be 0 (uniform) or above 1, got %v", ErrConfig, c.Skew)
	case c.Delivery > consumer.AtLeastOnce:
		return fmt.Errorf("%w: unknown delivery", ErrConfig)
	}
	for _, b := range c.Brokers {
		if b == "" {
			return fmt.Errorf("%w: an empty broker address", ErrConfig)
		}
	}
	if _, err := decode.ParseFormat(c.Format); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}
