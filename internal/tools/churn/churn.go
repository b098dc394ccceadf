// Package churn changes budgets at a steady rate through the control
// topic, as a load: `throttler budget churn` and the scale run's
// -churn-rate use it to measure that workers keep delivering while 100
// budgets a second are added, changed and deleted.
//
// Changes cycle through three kinds: an add (a new period budget
// "<prefix>000042", target 100 a minute), a change (an existing budget of
// Config.Change, its target scaled by a factor from 0.5 to 2, drawn from
// the seed), and a delete (of the oldest budget this run added; an add
// when there is none). Without budgets to change, changes are adds. The
// Planner is deterministic: the same Config gives the same changes.
package churn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/control"
)

// ErrConfig is wrapped by the errors of an invalid Config.
var ErrConfig = errors.New("invalid churn config")

// DefaultPrefix names the budgets a churn adds.
const DefaultPrefix = "churn-"

// Config says what to change, how fast and for how long.
type Config struct {
	// Topic is the control topic. Required.
	Topic string
	// Rate is the changes per second. Required, positive.
	Rate float64
	// Duration stops the run; 0 means until ctx ends.
	Duration time.Duration
	// Change are budgets whose targets the changes scale; optional.
	Change []config.Budget
	// Prefix names the added budgets. Default DefaultPrefix.
	Prefix string
	// Seed makes the changes reproducible.
	Seed uint64
}

// Summary counts what a run wrote; every record was acknowledged.
type Summary struct {
	Adds    int     `json:"adds"`
	Changes int     `json:"changes"`
	Deletes int     `json:"deletes"`
	Seconds float64 `json:"seconds"`
}

// Planner makes the sequence of changes. Not safe for concurrent use.
type Planner struct {
	cfg   Config
	rng   *rand.Rand
	n     int      // changes made
	added []string // added and not yet deleted, oldest first
	next  int      // number of the next added budget
}

// NewPlanner checks cfg and returns its planner.
func NewPlanner(cfg Config) (*Planner, error) {
	switch {
	case cfg.Topic == "":
		return nil, fmt.Errorf("%w: no control topic", ErrConfig)
	case !(cfg.Rate > 0):
		return nil, fmt.Errorf("%w: rate must be positive, got %v", ErrConfig, cfg.Rate)
	case cfg.Duration < 0:
		return nil, fmt.Errorf("%w: duration must not be negative, got %v", ErrConfig, cfg.Duration)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	return &Planner{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5851f42d4c957f2d))}, nil
}

// Next returns the next change as a control record's key and value, and
// its kind: "add", "change" or "delete".
func (p *Planner) Next() (key, val []byte, kind string, err error) {
	i := p.n
	p.n++
	switch {
	case i%3 == 1 && len(p.cfg.Change) > 0:
		b := p.cfg.Change[p.rng.IntN(len(p.cfg.Change))]
		b.Target = max(1, b.Target*(0.5+1.5*p.rng.Float64()))
		key, val, err = control.EncodeSet(b)
		return key, val, "change", err
	case i%3 == 2 && len(p.added) > 0:
		name := p.added[0]
		p.added = p.added[1:]
		key, val, err = control.EncodeDelete(name)
		return key, val, "delete", err
	}
	name := fmt.Sprintf("%s%06d", p.cfg.Prefix, p.next)
	p.next++
	p.added = append(p.added, name)
	key, val, err = control.EncodeSet(config.Budget{Name: name, Target: 100, Period: time.Minute})
	return key, val, "add", err
}

// Run writes p's changes to the control topic through cl at the rate,
// every tick (10ms) the changes due since the start, until the duration
// passes or ctx ends; then it waits for the acknowledgements (at most
// 10 s) and returns the counts. A produce error ends the run with it.
func Run(ctx context.Context, cl *kgo.Client, p *Planner) (Summary, error) {
	start := time.Now()
	runCtx := ctx
	if p.cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, p.cfg.Duration)
		defer cancel()
	}
	var (
		sum     Summary
		mu      sync.Mutex
		failed  atomic.Pointer[error]
		tick    = time.NewTicker(10 * time.Millisecond)
		counted = map[string]*int{"add": &sum.Adds, "change": &sum.Changes, "delete": &sum.Deletes}
	)
	defer tick.Stop()
	for sent := 0; runCtx.Err() == nil && failed.Load() == nil; {
		select {
		case <-runCtx.Done():
			continue
		case now := <-tick.C:
			elapsed := now.Sub(start)
			if p.cfg.Duration > 0 {
				elapsed = min(elapsed, p.cfg.Duration)
			}
			due := int(p.cfg.Rate * elapsed.Seconds())
			for ; sent < due; sent++ {
				key, val, kind, err := p.Next()
				if err != nil {
					return sum, err
				}
				cl.Produce(ctx, &kgo.Record{Topic: p.cfg.Topic, Key: key, Value: val}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					mu.Lock()
					*counted[kind]++
					mu.Unlock()
				})
			}
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ferr := cl.Flush(fctx)
	mu.Lock()
	defer mu.Unlock()
	sum.Seconds = time.Since(start).Seconds()
	if e := failed.Load(); e != nil {
		return sum, fmt.Errorf("control topic %s: %w", p.cfg.Topic, *e)
	}
	return sum, ferr
}
