package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of RunConfig.
const (
	DefaultTick         = 10 * time.Millisecond
	DefaultFlushTimeout = 10 * time.Second
)

// ErrRun is wrapped by the error Run returns for an invalid RunConfig.
var ErrRun = errors.New("invalid load generator run")

// RunConfig says where, how fast and how long Run produces.
type RunConfig struct {
	// Topic receives the events. Required.
	Topic string
	// Rate is the target in events per second; 0 means as fast as the
	// client accepts records.
	Rate float64
	// Duration stops the run after this long; 0 means no limit.
	Duration time.Duration
	// Count stops the run after this many events; 0 means no limit.
	Count uint64
	// Tick is the pacing period: each tick produces the events due since
	// the previous one, in one batch. Default 10ms.
	Tick time.Duration
	// FlushTimeout bounds the wait for the last records to be acknowledged
	// once the run stops (also when ctx is done). Default 10s.
	FlushTimeout time.Duration
	// Encoder writes the events (Register makes one of Avro or Protobuf).
	// Default: JSON.
	Encoder Encoder
}

// Summary is the outcome of a run.
type Summary struct {
	// Produced counts the events the brokers acknowledged.
	Produced uint64 `json:"produced"`
	// Seconds is the wall time from the start until the last
	// acknowledgement.
	Seconds float64 `json:"seconds"`
	// Rate is Produced / Seconds.
	Rate float64 `json:"rate"`
}

// Run produces events from g to rc.Topic through cl until rc.Duration or
// rc.Count is reached, ctx is done, or a record fails; with neither limit
// it runs until ctx is done. Records are keyed by user and timestamped with
// the event time. It then flushes and returns what was acknowledged, with
// the first produce error, if any. ctx ending is not an error.
func Run(ctx context.Context, cl *kgo.Client, g *Generator, rc RunConfig) (Summary, error) {
	if rc.Topic == "" {
		return Summary{}, fmt.Errorf("%w: no topic", ErrRun)
	}
	if rc.Rate < 0 || rc.Duration < 0 || rc.Tick < 0 || rc.FlushTimeout < 0 {
		return Summary{}, fmt.Errorf("%w: rate, duration, tick and flush timeout must not be negative", ErrRun)
	}
	if rc.Tick == 0 {
		rc.Tick = DefaultTick
	}
	if rc.FlushTimeout == 0 {
		rc.FlushTimeout = DefaultFlushTimeout
	}
	// Records live on ctx, not on the duration: at the end of the
	// duration the records in flight are flushed, not failed.
	r := &runner{cl: cl, g: g, rc: rc, recCtx: ctx, stop: make(chan struct{})}
	start := time.Now()
	runCtx := ctx
	if rc.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, rc.Duration)
		defer cancel()
	}
	if rc.Rate > 0 {
		r.paced(runCtx, start)
	} else {
		r.unpaced(runCtx)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rc.FlushTimeout)
	defer cancel()
	flushErr := cl.Flush(fctx)
	secs := time.Since(start).Seconds()
	s := Summary{Produced: r.acked.Load(), Seconds: secs}
	if secs > 0 {
		s.Rate = float64(s.Produced) / secs
	}
	if err := r.err(); err != nil {
		return s, err
	}
	if flushErr != nil {
		return s, fmt.Errorf("flush: %w", flushErr)
	}
	return s, nil
}

type runner struct {
	cl     *kgo.Client
	g      *Generator
	rc     RunConfig
	recCtx context.Context
	sent   uint64

	acked    atomic.Uint64
	mu       sync.Mutex
	firstErr error
	stop     chan struct{} // closed on the first produce error
}

func (r *runner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstErr
}

// remaining returns how many more events the count allows.
func (r *runner) remaining(n uint64) uint64 {
	if r.rc.Count > 0 && r.sent+n > r.rc.Count {
		return r.rc.Count - r.sent
	}
	return n
}

func (r *runner) done() bool { return r.rc.Count > 0 && r.sent >= r.rc.Count }

// paced produces, every tick, the events due at the rate since start.
func (r *runner) paced(ctx context.Context, start time.Time) {
	t := time.NewTicker(r.rc.Tick)
	defer t.Stop()
	for !r.done() {
		select {
		case <-ctx.Done():
			if r.rc.Duration > 0 && r.recCtx.Err() == nil {
				// The duration is over: top up to exactly Rate*Duration.
				r.catchUp(time.Now(), r.rc.Duration)
			}
			return
		case <-r.stop:
			return
		case now := <-t.C:
			r.catchUp(now, now.Sub(start))
		}
	}
}

// catchUp produces the events due after elapsed (at most Duration) at the
// rate.
func (r *runner) catchUp(now time.Time, elapsed time.Duration) {
	if r.rc.Duration > 0 && elapsed > r.rc.Duration {
		elapsed = r.rc.Duration
	}
	// The epsilon keeps 500/s x 0.3s at 150, not 149.99999999999997.
	due := uint64(r.rc.Rate*elapsed.Seconds() + 1e-9)
	if due > r.sent {
		r.produce(now, r.remaining(due-r.sent))
	}
}

// unpaced produces batches as fast as the client buffers them.
func (r *runner) unpaced(ctx context.Context) {
	const batch = 1000
	for !r.done() {
		select {
		case <-ctx.Done():
			return
		case <-r.stop:
			return
		default:
		}
		r.produce(time.Now(), r.remaining(batch))
	}
}

func (r *runner) produce(now time.Time, n uint64) {
	for range n {
		e := r.g.Next(now)
		rec := &kgo.Record{
			Topic:     r.rc.Topic,
			Key:       []byte(e.User),
			Value:     r.rc.Encoder.Append(make([]byte, 0, 128), &e),
			Timestamp: now,
		}
		r.sent++
		r.cl.Produce(r.recCtx, rec, r.promise)
	}
}

func (r *runner) promise(_ *kgo.Record, err error) {
	if err == nil {
		r.acked.Add(1)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		r.firstErr = fmt.Errorf("produce: %w", err)
		close(r.stop)
	}
}
