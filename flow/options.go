package flow

import (
	"fmt"
	"time"
)

// Option configures a Tree and the controllers in it.
type Option interface{ apply(*config) }

type optFunc func(*config)

func (f optFunc) apply(c *config) { f(c) }

type config struct {
	tune        time.Duration
	sync        time.Duration
	accel       time.Duration
	staleAfter  time.Duration
	decay       float64
	scoreMemory time.Duration
	priorShare  float64
	maxDelay    time.Duration
	ex          Exchange
	dropAfter   time.Duration
	idleRetune  time.Duration
}

// frozen is the gap between two visit rounds past which the node's picture
// is taken for stale (see Controller.resuming): twice StaleAfter, long
// enough for its peers to have taken it for gone (StaleAfter) and made up
// its share for as long again. A stall of the whole machine is shorter:
// up to 4 s was seen on a loaded 2-core machine, its peers stalled too,
// and a picture that old is still right.
func (c *config) frozen() int64 { return 2 * int64(c.staleAfter) }

func defaultCfg() config {
	return config{
		tune:        100 * time.Millisecond,
		sync:        time.Second,
		decay:       0.5,
		scoreMemory: 5 * time.Minute,
		priorShare:  1,
		maxDelay:    30 * time.Second,
	}
}

// derive fills the options whose defaults depend on others.
func (c *config) derive() {
	if c.accel == 0 {
		c.accel = 3 * c.sync
	}
	if c.staleAfter == 0 {
		c.staleAfter = 3 * c.sync
	}
	if c.dropAfter == 0 {
		c.dropAfter = c.staleAfter
	}
	if c.idleRetune == 0 {
		c.idleRetune = c.sync
	}
}

func (c *config) validate() error {
	switch {
	case c.tune <= 0:
		return fmt.Errorf("flow: tune interval must be positive, got %v", c.tune)
	case c.sync <= 0:
		return fmt.Errorf("flow: sync interval must be positive, got %v", c.sync)
	case c.accel <= 0:
		return fmt.Errorf("flow: acceleration period must be positive, got %v", c.accel)
	case c.staleAfter <= 0:
		return fmt.Errorf("flow: stale-after must be positive, got %v", c.staleAfter)
	case !(c.decay >= 0 && c.decay < 1):
		return fmt.Errorf("flow: decay must be in [0, 1), got %v", c.decay)
	case c.scoreMemory <= 0:
		return fmt.Errorf("flow: score memory must be positive, got %v", c.scoreMemory)
	case !(c.priorShare > 0 && c.priorShare <= 1):
		return fmt.Errorf("flow: prior share must be in (0, 1], got %v", c.priorShare)
	case c.maxDelay < 0:
		return fmt.Errorf("flow: max reward delay must not be negative, got %v", c.maxDelay)
	case c.dropAfter < 0:
		return fmt.Errorf("flow: drop-after must not be negative, got %v", c.dropAfter)
	case c.idleRetune < 0:
		return fmt.Errorf("flow: idle retune interval must not be negative, got %v", c.idleRetune)
	}
	return nil
}

// TuneInterval sets how often the caller runs Tree.Tune, which re-tunes the
// working pass rate from local traffic between syncs. Default 100ms.
func TuneInterval(d time.Duration) Option { return optFunc(func(c *config) { c.tune = d }) }

// SyncInterval sets how often nodes publish and read counters. The
// controller uses it to judge the age of peer reports. Default 1s.
func SyncInterval(d time.Duration) Option { return optFunc(func(c *config) { c.sync = d }) }

// Acceleration sets the horizon over which a lag behind (or an excess over)
// the ideal curve is made up: the cluster limiter's AccelerationPeriod. Default three
// sync intervals.
func Acceleration(d time.Duration) Option { return optFunc(func(c *config) { c.accel = d }) }

// StaleAfter sets how long past its last report a peer source is still
// extrapolated; after that it counts as gone (its traffic no longer in the
// cluster rate). Default three sync intervals.
func StaleAfter(d time.Duration) Option { return optFunc(func(c *config) { c.staleAfter = d }) }

// Decay sets the attenuation coefficient P of the cluster limiter's
// smoothed quantities (local traffic proportion, ideal pass rate). Default 0.5.
func Decay(p float64) Option { return optFunc(func(c *config) { c.decay = p }) }

// ScoreMemory sets the half-life of the score distribution that scored
// budgets cut from. Default 5m.
func ScoreMemory(d time.Duration) Option { return optFunc(func(c *config) { c.scoreMemory = d }) }

// PriorShare sets this node's assumed share of the cluster's traffic until
// peers' reports tell the real one (e.g. assigned partitions over all
// partitions, or 1/N for N nodes). Tree.SetShare changes it later.
// Default 1.
func PriorShare(f float64) Option { return optFunc(func(c *config) { c.priorShare = f }) }

// MaxRewardDelay bounds the reward delay that reward budgets estimate.
// Default 30s.
func MaxRewardDelay(d time.Duration) Option { return optFunc(func(c *config) { c.maxDelay = d }) }

// Peers sets the Exchange a controller reads its peers' reports from when
// it is created (its budget's first lane on this node opens) and when a
// Tune finds its last read StaleAfter old, so that its first decisions
// after a start or an idle spell know the cluster. Sync reads from the
// exchange it is given. Tree.SetExchange sets it later. Default: none (a
// new controller starts from local traffic and reads its peers at the next
// Sync).
func Peers(ex Exchange) Option { return optFunc(func(c *config) { c.ex = ex }) }

// DropAfter sets how long a controller whose lanes all closed is kept,
// with its measured rates, peers and score distribution, before it is
// dropped: a source that closes and opens again within it (a rolled back
// transaction, a quick rebalance) finds it as it was. Default: StaleAfter.
func DropAfter(d time.Duration) Option { return optFunc(func(c *config) { c.dropAfter = d }) }

// IdleRetune sets how often a controller whose lanes are open but see no
// traffic is visited anyway (see Tree.Tune), so that their next event is
// decided, and its Snapshot tells, a picture at most that old. Default:
// the sync interval.
func IdleRetune(d time.Duration) Option { return optFunc(func(c *config) { c.idleRetune = d }) }
