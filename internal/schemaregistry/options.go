package schemaregistry

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/throttler/throttler/internal/configerr"
)

// Defaults of the options.
const (
	DefaultRequestTimeout = 5 * time.Second
	DefaultWait           = 2 * time.Second
	DefaultMinBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff     = 2 * time.Second
	DefaultUnknownFor     = 10 * time.Second
	// DefaultMaxIDs bounds the schema ids a source keeps (MaxIDs).
	DefaultMaxIDs = 1024
	// DefaultLookups is how many fetches of ids a source makes a second
	// at most (Lookups), DefaultLookupBurst at once.
	DefaultLookups     = 20
	DefaultLookupBurst = 50
)

// ErrConfig is wrapped by New's errors about its arguments: the one
// sentinel of configuration errors (decode.ErrInvalidConfig).
var ErrConfig = configerr.ErrInvalid

// Opt configures a Source.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

type cfg struct {
	tls                    *tls.Config
	user, pass             string
	requestTimeout         time.Duration
	wait                   time.Duration
	minBackoff, maxBackoff time.Duration
	unknownFor             time.Duration
	maxIDs                 int
	lookups                float64
	lookupBurst            int
	now                    func() time.Time
	log                    zerolog.Logger
}

func defaultCfg() cfg {
	return cfg{requestTimeout: DefaultRequestTimeout, wait: DefaultWait, minBackoff: DefaultMinBackoff,
		maxBackoff: DefaultMaxBackoff, unknownFor: DefaultUnknownFor, maxIDs: DefaultMaxIDs,
		lookups: DefaultLookups, lookupBurst: DefaultLookupBurst, now: time.Now, log: zerolog.Nop()}
}

func (c *cfg) validate(urls []string) error {
	switch {
	case len(urls) == 0:
		return fmt.Errorf("%w: schema registry: no URL", ErrConfig)
	case c.requestTimeout <= 0 || c.wait < 0 || c.unknownFor < 0:
		return fmt.Errorf("%w: schema registry: timeouts must be positive", ErrConfig)
	case c.minBackoff <= 0 || c.maxBackoff < c.minBackoff:
		return fmt.Errorf("%w: schema registry: backoff from %v to %v", ErrConfig, c.minBackoff, c.maxBackoff)
	case c.now == nil:
		return fmt.Errorf("%w: schema registry: nil clock", ErrConfig)
	case c.maxIDs < 1 || !(c.lookups > 0) || c.lookupBurst < 1:
		return fmt.Errorf("%w: schema registry: ids kept, lookups and their burst must be positive", ErrConfig)
	}
	return nil
}

// backoff returns the wait after fails failed fetches in a row: doubling
// from the minimum to the maximum.
func (c *cfg) backoff(fails int) time.Duration {
	d := c.minBackoff
	for i := 1; i < fails && d < c.maxBackoff; i++ {
		d *= 2
	}
	return min(d, c.maxBackoff)
}

// TLS sets the TLS configuration of https URLs. Default: the system's.
func TLS(t *tls.Config) Opt { return optFunc(func(c *cfg) { c.tls = t }) }

// BasicAuth sets the user and password of HTTP basic authentication.
// Default none.
func BasicAuth(user, pass string) Opt { return optFunc(func(c *cfg) { c.user, c.pass = user, pass }) }

// RequestTimeout bounds one request to the registry. Default
// DefaultRequestTimeout (5s).
func RequestTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.requestTimeout = d }) }

// WithLogger sets the logger. Default zerolog.Nop().
func WithLogger(l zerolog.Logger) Opt {
	return optFunc(func(c *cfg) { c.log = l.With().Str("subsystem", "schema-registry").Logger() })
}

// SetLogger sets the logger of a running source (as WithLogger).
func (s *Source) SetLogger(l zerolog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	WithLogger(l).apply(&s.cfg)
}

// metrics are a Source's collectors.
type metrics struct {
	up       prometheus.Gauge
	requests *prometheus.CounterVec
	waits    prometheus.Counter
	cached   prometheus.Gauge
}

func (m *metrics) init() {
	m.up = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_schema_registry_up",
		Help: "1 when the last fetch from the schema registry got an answer, 0 when it failed."})
	m.up.Set(1)
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttler_schema_registry_requests_total",
		Help: "Schema fetches from the registry, by result: ok, unknown (no such id), error; and throttled: fetches put off because of Lookups."}, []string{"result"})
	m.waits = prometheus.NewCounter(prometheus.CounterOpts{Name: "throttler_schema_waits_total",
		Help: "Times a record was held (its partition paused, nothing dead-lettered) because its schema could not be had yet."})
	m.cached = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_schemas_cached",
		Help: "Schemas fetched and kept."})
}

func (m *metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.up, m.requests, m.waits, m.cached}
}
