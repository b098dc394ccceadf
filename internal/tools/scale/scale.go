// Package scale is `throttler scale`: one command that measures what a
// deployment costs as its number of budgets grows.
//
// For each budget count B of Config.Budgets, a row: an embedded broker
// (`throttler broker`, a process of its own with a data directory), an
// input topic of P partitions, W `throttler run` worker processes of one
// group, E events a second of ~100-byte JSON from the load generator (in
// this process) for a duration, and B budgets: Paced window budgets
// taking PacedShare of the events, paced to pass half of them over the
// run, and B-Paced light period budgets over Zipf traffic (in a
// budgets_file, or imported through the control topic). Optionally,
// budget changes at a rate through the control topic during the middle
// third of the run.
//
// It reports per row: the coordination written (the stats, caps and
// control topics' records and key+value bytes, read whole at the
// end: the broker compacts nothing during the run) against the input's;
// the largest record; the transactions aborted in steady state (the last
// two thirds of the load) from the workers' throttler_commits_total; each
// worker's CPU (from /proc, as a fraction of one core) and peak RSS
// (VmHWM); the time from each worker's start to its first delivered
// record (from its metrics, polled) and the cluster's first delivery;
// lost and duplicated ids (the destination topics read with
// read_committed against the input); the paced budgets' passes against
// their targets; the longest gap between deliveries on an input partition
// in steady state and, with changes, while they ran; and the time
// `throttler status --top 20` took at the end, once the broker compacted
// its topics (SIGUSR1).
//
// Workers that deliver nothing make a row that says so: every wait has a
// timeout, a worker over Config.MaxRSS is killed, and the row's figures
// are what could be measured.
package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/internal/tools/bench"
)

// ErrConfig is wrapped by the errors of an invalid Config.
var ErrConfig = errors.New("invalid scale config")

// Defaults of Config.
const (
	DefaultPartitions = 48
	DefaultWorkers    = 3
	DefaultRate       = 5000
	DefaultDuration   = 60 * time.Second
	DefaultPaced      = 10
	DefaultPacedShare = 0.5
	DefaultSkew       = 1.1
	DefaultUsers      = 10_000
	DefaultMaxRSS     = 3 << 30
	// DefaultYardstick is the records of the CLI's yardstick
	// (Config.Yardstick): about a second a round on a 2-core machine.
	DefaultYardstick = 1_000_000
)

// DefaultBudgets are the rows of a run.
var DefaultBudgets = []int{1_000, 10_000, 100_000}

// Config says what to run.
type Config struct {
	Budgets    []int         // budget counts, one row each; default DefaultBudgets
	Partitions int32         // input partitions; default 48
	Workers    int           // worker processes; default 3
	Rate       float64       // events per second; default 5,000
	Duration   time.Duration // of the load, per row; default 60s
	Paced      int           // paced window budgets; default 10
	PacedShare float64       // their share of the events, in (0, 1); default 0.5
	Skew       float64       // Zipf exponent of the light budgets (> 1), 0 uniform (the CLI defaults to DefaultSkew)
	Users      int           // distinct users (record keys); default 10,000
	Delivery   string        // exactly-once (default) or at-least-once
	// ViaControl imports the light budgets through the control topic
	// (`throttler budget import`) instead of a budgets_file.
	ViaControl bool
	// ChurnRate is the budget changes per second during the middle third
	// of the load (internal/tools/churn); 0: none.
	ChurnRate float64
	// FirstDelivery bounds the wait for a first delivered record; a row
	// with none by then says "nothing delivered". Default 60s.
	FirstDelivery time.Duration
	// Drain bounds the wait, after the load, for the workers to commit
	// every input record. Default 60s.
	Drain time.Duration
	// MaxRSS kills a worker whose RSS passes it. Default 3 GiB.
	MaxRSS int64
	// Dir holds the rows' brokers, configs and logs; default a temporary
	// directory, removed at the end unless Keep.
	Dir  string
	Keep bool
	// ProfileDir, when set, receives a CPU profile of each worker
	// process, budgets-B-worker-N.prof (`throttler run --cpuprofile`).
	ProfileDir string
	// Binary is the throttler executable to run; default this one.
	Binary string
	// Yardstick, when above 0, runs `throttler bench` (kfake in a process
	// of its own, exactly-once, one budget) over that many records before
	// the rows: the passthrough's and the pipeline's records/s name the
	// machine's speed beside its figures (Report.Yardstick).
	Yardstick int
	// Log receives progress.
	Log zerolog.Logger
}

func (c *Config) defaults() error {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if len(c.Budgets) == 0 {
		c.Budgets = DefaultBudgets
	}
	c.Partitions = cmp0(c.Partitions, DefaultPartitions)
	c.Workers = cmp0(c.Workers, DefaultWorkers)
	def(&c.Rate, DefaultRate)
	c.Duration = cmp0(c.Duration, DefaultDuration)
	c.Paced = cmp0(c.Paced, DefaultPaced)
	def(&c.PacedShare, DefaultPacedShare)
	c.Users = cmp0(c.Users, DefaultUsers)
	c.FirstDelivery = cmp0(c.FirstDelivery, 60*time.Second)
	c.Drain = cmp0(c.Drain, 60*time.Second)
	c.MaxRSS = cmp0(c.MaxRSS, DefaultMaxRSS)
	if c.Delivery == "" {
		c.Delivery = "exactly-once"
	}
	if c.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Binary = exe
	}
	return c.check()
}

func cmp0[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

func (c *Config) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	for _, b := range c.Budgets {
		if b < c.Paced || b < 1 {
			return bad("a row of %d budgets has fewer than the %d paced ones", b, c.Paced)
		}
	}
	switch {
	case c.Partitions < 1 || c.Workers < 1 || c.Paced < 1 || c.Users < 1:
		return bad("partitions, workers, paced budgets and users must be at least 1")
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return bad("rate must be positive, got %v", c.Rate)
	case c.Duration < 3*time.Second:
		return bad("duration must be at least 3s, got %v", c.Duration)
	case !(c.PacedShare > 0 && c.PacedShare < 1):
		return bad("paced share must be between 0 and 1, got %v", c.PacedShare)
	case c.Skew != 0 && !(c.Skew > 1) || math.IsInf(c.Skew, 0):
		return bad("skew must be 0 (uniform) or above 1, got %v", c.Skew)
	case c.Delivery != "exactly-once" && c.Delivery != "at-least-once":
		return bad("delivery must be exactly-once or at-least-once, got %q", c.Delivery)
	case c.ChurnRate < 0 || math.IsNaN(c.ChurnRate) || math.IsInf(c.ChurnRate, 0):
		return bad("churn rate must be at least 0, got %v", c.ChurnRate)
	case c.FirstDelivery < 0 || c.Drain < 0 || c.MaxRSS < 0:
		return bad("timeouts and the RSS limit must not be negative")
	case c.Yardstick < 0:
		return bad("yardstick records must be at least 0, got %d", c.Yardstick)
	}
	return nil
}

// Version is the version of the JSON report; fields are only added
// within a version.
const Version = 1

// Report is what Run measured.
type Report struct {
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	Config  struct {
		Partitions int32   `json:"partitions"`
		Workers    int     `json:"workers"`
		Rate       float64 `json:"rate"`
		Seconds    float64 `json:"duration_seconds"`
		Paced      int     `json:"paced"`
		PacedShare float64 `json:"paced_share"`
		Skew       float64 `json:"skew"`
		Users      int     `json:"users"`
		Delivery   string  `json:"delivery"`
		ViaControl bool    `json:"budgets_via_control"`
		ChurnRate  float64 `json:"churn_rate"`
	} `json:"config"`
	Rows []Row `json:"rows"`
	// Yardstick is the machine's speed, measured before the rows
	// (Config.Yardstick); nil when not measured.
	Yardstick *Yardstick `json:"yardstick,omitempty"`
}

// Yardstick is what `throttler bench` measured before the rows: the
// medians, over Rounds rounds of Records records, of the raw
// passthrough's and of the pipeline's records/s.
type Yardstick struct {
	Records        int     `json:"records"`
	Rounds         int     `json:"rounds"`
	PassthroughRPS float64 `json:"passthrough_rps"`
	PipelineRPS    float64 `json:"pipeline_rps"`
}

// yardstickRounds is the number of rounds of Config.Yardstick.
const yardstickRounds = 3

// measureYardstick runs the bench of Config.Yardstick.
func measureYardstick(ctx context.Context, c *Config) (*Yardstick, error) {
	res, err := bench.Run(ctx, bench.Config{Records: c.Yardstick, Rounds: yardstickRounds, Log: c.Log})
	if err != nil {
		return nil, fmt.Errorf("yardstick: %w", err)
	}
	return &Yardstick{Records: c.Yardstick, Rounds: yardstickRounds, PassthroughRPS: res.PassthroughRPS, PipelineRPS: res.PipelineRPS}, nil
}

// absolutePaths makes Dir and ProfileDir absolute: the brokers and workers
// run in their row's directory, where a relative path names another place.
func (c *Config) absolutePaths() error {
	for _, p := range []*string{&c.Dir, &c.ProfileDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}

// Run runs a row per budget count, in order; onRow, if not nil, gets each
// row as it ends. An error of a row ends the run with the rows so far.
func Run(ctx context.Context, c Config, onRow func(Row)) (Report, error) {
	if err := c.defaults(); err != nil {
		return Report{}, err
	}
	r := Report{Version: Version, Started: time.Now().UTC()}
	r.Config.Partitions, r.Config.Workers, r.Config.Rate, r.Config.Seconds = c.Partitions, c.Workers, c.Rate, c.Duration.Seconds()
	r.Config.Paced, r.Config.PacedShare, r.Config.Skew, r.Config.Users = c.Paced, c.PacedShare, c.Skew, c.Users
	r.Config.Delivery, r.Config.ViaControl, r.Config.ChurnRate = c.Delivery, c.ViaControl, c.ChurnRate
	if err := c.absolutePaths(); err != nil {
		return r, err
	}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "throttler-scale-")
		if err != nil {
			return r, err
		}
		c.Dir = dir
		if !c.Keep {
			defer os.RemoveAll(dir)
		}
	}
	if c.Yardstick > 0 {
		y, err := measureYardstick(ctx, &c)
		if err != nil {
			return r, err
		}
		r.Yardstick = y
	}
	for _, b := range c.Budgets {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		row, err := runRow(ctx, &c, b)
		if err != nil {
			return r, fmt.Errorf("row of %d budgets: %w", b, err)
		}
		r.Rows = append(r.Rows, row)
		if onRow != nil {
			onRow(row)
		}
	}
	return r, nil
}
