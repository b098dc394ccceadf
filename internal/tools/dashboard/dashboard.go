// Package dashboard serves the live web dashboard of `throttler
// dashboard` (and of `throttler demo`): a page and the versioned JSON API
// behind it (/api/v1/..., docs/dashboard.md).
//
// The Server reads the cluster through a Source (a stats.View satisfies
// it), samples it every SampleEvery into a snapshot (what the API serves)
// and into the budgets' curves (history.go: bounded memory), and tells
// open pages of every new sample through server-sent events. It reads no
// clock of its own: Sample takes the instant, and Run ticks the Clock
// option, so tests drive it without Kafka and in virtual time.
package dashboard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttler/throttler/internal/httpguard"
	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/stats"
)

// Source is what the dashboard reads: the cluster as the stats topic
// shows it. A *stats.View satisfies it.
type Source interface {
	clusterstatus.Source
	Workers() []stats.WorkerStatus
}

// Defaults of the options.
const (
	DefaultSampleEvery = time.Second
	// DefaultMaxPoints bounds the points of all curves together (each
	// budget keeps at least 32; see history.go): 24 MB.
	DefaultMaxPoints  = 2_000_000
	DefaultStaleAfter = 15 * time.Second
	DefaultMaxStreams = 64
	// Band is the tolerance band around the ideal course, in parts of
	// the target: a budget outside it is off course.
	Band = 0.01
)

// Opt configures a Server.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

type cfg struct {
	topic       string
	now         func() time.Time
	sampleEvery time.Duration
	staleAfter  time.Duration
	maxStreams  int
	guard       httpguard.Options
}

func defaultCfg() cfg {
	return cfg{now: time.Now, sampleEvery: DefaultSampleEvery, staleAfter: DefaultStaleAfter, maxStreams: DefaultMaxStreams}
}

// Topic names the stats topic in the page and the API. Default "".
func Topic(name string) Opt { return optFunc(func(c *cfg) { c.topic = name }) }

// Clock sets the clock Run samples with. Default time.Now.
func Clock(now func() time.Time) Opt { return optFunc(func(c *cfg) { c.now = now }) }

// SampleEvery sets how often Run samples the Source. Default 1s; at most
// one sample per tenth of a second is kept.
func SampleEvery(d time.Duration) Opt { return optFunc(func(c *cfg) { c.sampleEvery = d }) }

// StaleAfter is the report age past which a budget is shown as stale: its
// oldest source's report is that old. Default 15s.
func StaleAfter(d time.Duration) Opt { return optFunc(func(c *cfg) { c.staleAfter = d }) }

// Guard sets the TLS, credentials and allowed host names of Serve's
// server (internal/httpguard; its CSP is the page's, CSP). Default: plain
// HTTP, no credentials, IP addresses and loopback names only.
func Guard(o httpguard.Options) Opt { return optFunc(func(c *cfg) { c.guard = o }) }

// CSP is the Content-Security-Policy of every answer of the dashboard:
// scripts and styles from the dashboard itself only (styles inline too:
// the chart's SVG and the bars' widths), data from its API, no frame.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Server samples a Source and serves the dashboard. Create one with New;
// it is safe for concurrent use.
type Server struct {
	cfg cfg
	src Source

	snap atomic.Pointer[snapshot] // the newest sample; never nil after New

	mu   sync.RWMutex // guards hist
	hist *history

	tickMu sync.Mutex
	tick   chan struct{} // closed at the next sample, then replaced

	streams   atomic.Int64  // event streams open
	closed    chan struct{} // closed by Close: ends the event streams
	closeOnce sync.Once
}

// New returns a Server reading src. It takes a first sample at once.
func New(src Source, opts ...Opt) *Server {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if c.sampleEvery <= 0 {
		c.sampleEvery = DefaultSampleEvery
	}
	if c.staleAfter <= 0 {
		c.staleAfter = DefaultStaleAfter
	}
	if c.maxStreams <= 0 {
		c.maxStreams = DefaultMaxStreams
	}
	c.guard.CSP = CSP
	now := c.now()
	s := &Server{cfg: c, src: src, hist: newHistory(now, DefaultMaxPoints), tick: make(chan struct{}), closed: make(chan struct{})}
	s.Sample(now)
	return s
}

// Close ends the open event streams (pages reconnect to whatever serves
// next), so that an http.Server's Shutdown need not wait for them. The
// Server still answers other requests. Close is idempotent.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.closed) }) }

// Run samples every SampleEvery until ctx ends. A sample that takes long
// (100,000 budgets: about a tenth of a second) spaces the next ones out to
// ten times its duration, so that sampling never takes more than a tenth
// of a core.
func (s *Server) Run(ctx context.Context) {
	wait := s.cfg.sampleEvery
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		t0 := time.Now()
		s.Sample(s.cfg.now())
		took := time.Since(t0)
		wait = max(s.cfg.sampleEvery-took, 9*took)
	}
}

// Serve samples and serves the dashboard on ln until ctx ends, then ends
// the event streams and shuts the HTTP server down (waiting at most 5 s
// for requests in progress). The server is internal/httpguard's: its
// timeouts, headers and Host check, and the Guard option's TLS (ln must
// then come from httpguard.Listen) and credentials.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := httpguard.Server(s.Handler(), s.cfg.guard)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go s.Run(ctx)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Sample reads the Source as of now: a new snapshot for the API and a new
// point on every budget's curve. Pages are told at once.
func (s *Server) Sample(now time.Time) {
	st := clusterstatus.Build(s.src, s.cfg.topic, now)
	workers := s.src.Workers()
	prev := s.snap.Load()
	seq := uint64(1)
	if prev != nil {
		seq = prev.seq + 1
	}
	snap := buildSnapshot(st, workers, s.cfg.staleAfter, seq)

	s.mu.Lock()
	h := s.hist
	h.limits(len(snap.budgets), now)
	for i := range snap.budgets {
		b := &snap.budgets[i].Budget
		at := now // the instant the counts stand for
		if b.CountsAt != nil && b.CountsAt.Before(now) {
			at = *b.CountsAt
		}
		h.add(b.Name, b.Start, at, b.Achieved, float64(b.Passed), b.IdealAt)
	}
	if prev == nil || len(h.curves) > len(snap.budgets) {
		h.forget(func(name string) bool { _, ok := snap.index[name]; return ok })
	}
	snap.points, _ = h.size()
	s.mu.Unlock()

	s.snap.Store(snap)
	s.tickMu.Lock()
	close(s.tick)
	s.tick = make(chan struct{})
	s.tickMu.Unlock()
}

// next returns a channel closed at the next sample.
func (s *Server) next() <-chan struct{} {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	return s.tick
}
