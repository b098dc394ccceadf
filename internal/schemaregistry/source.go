// Package schemaregistry gives decoders the schemas of Avro and Protobuf
// records from a schema registry (Confluent's REST API, as Redpanda,
// Karapace and Apicurio serve it), through franz-go's pkg/sr: each schema
// id is fetched once, with the schemas it references, and kept. A registry
// that is down or slow is not the records' fault: Source.Schema answers at
// once that the schema is not available yet and when to try again, the
// worker holds the record's partition, and the fetch is retried with
// backoff; Source.Ready says so for /readyz, its metrics and logs too.
//
// Server is a registry in the process, for tests and the demo.
package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/time/rate"

	"github.com/throttler/throttler/decode"
)

// Source is a decode.Schemas of a schema registry. It is safe for
// concurrent use.
type Source struct {
	cfg cfg
	cl  *sr.Client
	m   metrics

	mu        sync.Mutex
	ids       *simplelru.LRU[int, *entry]
	lookups   *rate.Limiter
	down      bool
	downSince time.Time
	lastErr   error
}

// entry is what the source knows of one id.
type entry struct {
	schema    decode.Schema
	ok        bool
	unknownAt time.Time     // when the registry said it has no such id
	fetching  chan struct{} // closed when the fetch in flight ends
	waitEnd   time.Time     // callers wait for the fetch in flight until then
	fails     int           // fetches failed in a row
	retryAt   time.Time     // no fetch before
	err       error         // of the last failed fetch
}

// New returns a source of the registry at urls (tried in order).
func New(urls []string, opts ...Opt) (*Source, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(urls); err != nil {
		return nil, err
	}
	srOpts := []sr.ClientOpt{sr.URLs(append([]string(nil), urls...)...),
		sr.HTTPClient(&http.Client{Timeout: c.requestTimeout}), sr.UserAgent("throttler")}
	if c.tls != nil {
		srOpts = append(srOpts, sr.DialTLSConfig(c.tls))
	}
	if c.user != "" {
		srOpts = append(srOpts, sr.BasicAuth(c.user, c.pass))
	}
	cl, err := sr.NewClient(srOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: schema registry: %v", ErrConfig, err)
	}
	s := &Source{cfg: c, cl: cl, lookups: rate.NewLimiter(rate.Limit(c.lookups), c.lookupBurst)}
	// An entry evicted while cached (a schema it holds) leaves the gauge.
	s.ids, _ = simplelru.NewLRU(max(c.maxIDs, 1), func(_ int, old *entry) {
		if old.ok {
			s.m.cached.Dec()
		}
	})
	s.m.init()
	return s, nil
}

// Client returns the registry client (to register schemas: loadgen).
func (s *Source) Client() *sr.Client { return s.cl }

// Collectors returns the source's metrics, to register with the worker's.
func (s *Source) Collectors() []prometheus.Collector { return s.m.all() }

// unavailable is the answer for an id whose schema cannot be had now.
type unavailable struct {
	id    int
	after time.Duration
	err   error
}

func (u *unavailable) Error() string {
	return fmt.Sprintf("schema registry: schema %d: %v", u.id, u.err)
}
func (u *unavailable) Unwrap() error             { return u.err }
func (u *unavailable) RetryAfter() time.Duration { return u.after }

// errFetching is the cause while the first fetch of an id is in flight.
var errFetching = errors.New("still fetching")

// errThrottled is the cause while fetches wait for Lookups.
var errThrottled = errors.New("too many ids to look up at once: waiting (Lookups)")

// Schema returns the schema of id (decode.Schemas). Callers wait for a
// fetch until Wait after it started (together: a slow registry holds each
// partition once, not at every retry); a fetch that takes longer goes on
// in the background. Meanwhile, and after a failed fetch until its
// backoff ends, the answer is an error with RetryAfter.
func (s *Source) Schema(id int) (decode.Schema, error) {
	s.mu.Lock()
	e, known := s.ids.Get(id)
	if !known {
		e = &entry{}
	}
	if sch, err, done := s.answer(id, e, false); done {
		s.mu.Unlock()
		return sch, err
	}
	if e.fetching == nil {
		now := s.cfg.now()
		if r := s.lookups.ReserveN(now, 1); r.DelayFrom(now) > 0 {
			r.CancelAt(now)
			s.m.requests.WithLabelValues("throttled").Inc()
			s.m.waits.Inc()
			s.mu.Unlock()
			return decode.Schema{}, &unavailable{id: id, after: max(s.cfg.minBackoff, time.Duration(float64(time.Second)/s.cfg.lookups)), err: errThrottled}
		}
		if !known {
			s.ids.Add(id, e)
		}
		e.fetching, e.waitEnd = make(chan struct{}), time.Now().Add(s.cfg.wait)
		go s.fetch(id, e, e.fetching)
	}
	fetching, wait := e.fetching, time.Until(e.waitEnd)
	s.mu.Unlock()

	t := time.NewTimer(max(wait, 0))
	select {
	case <-fetching:
	case <-t.C:
	}
	t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	sch, err, _ := s.answer(id, e, true)
	return sch, err
}

// answer returns what is known of e now; done is false when a fetch
// should be (or is being) made and waited for. final gives an answer in
// any case. s.mu is held.
func (s *Source) answer(id int, e *entry, final bool) (sch decode.Schema, err error, done bool) {
	now := s.cfg.now()
	switch {
	case e.ok:
		return e.schema, nil, true
	case !e.unknownAt.IsZero() && now.Sub(e.unknownAt) < s.cfg.unknownFor:
		return decode.Schema{}, fmt.Errorf("schema registry: schema %d: %w", id, decode.ErrUnknownSchema), true
	case e.fetching != nil && final:
		s.m.waits.Inc()
		return decode.Schema{}, &unavailable{id: id, after: s.cfg.minBackoff, err: errFetching}, true
	case e.fetching == nil && now.Before(e.retryAt):
		s.m.waits.Inc()
		return decode.Schema{}, &unavailable{id: id, after: e.retryAt.Sub(now), err: e.err}, true
	case final: // the fetch ended, failed, while we waited
		s.m.waits.Inc()
		return decode.Schema{}, &unavailable{id: id, after: max(e.retryAt.Sub(now), 0), err: e.err}, true
	}
	return decode.Schema{}, nil, false
}

// fetch fetches id's schema and its references and records the outcome.
func (s *Source) fetch(id int, e *entry, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.requestTimeout)
	defer cancel()
	sch, err := s.cl.SchemaByID(ctx, id)
	var out decode.Schema
	if err == nil {
		out, err = s.resolve(ctx, sch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.fetching = nil
	now := s.cfg.now()
	var re *sr.ResponseError
	switch {
	case err == nil:
		e.schema, e.ok, e.fails, e.err = out, true, 0, nil
		s.m.requests.WithLabelValues("ok").Inc()
		s.m.cached.Inc()
		s.up(now)
	case errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.ErrorCode == sr.ErrSchemaNotFound.Code):
		e.unknownAt, e.fails, e.err = now, 0, nil
		s.m.requests.WithLabelValues("unknown").Inc()
		s.up(now)
	default:
		e.fails++
		e.err, e.retryAt = err, now.Add(s.cfg.backoff(e.fails))
		s.m.requests.WithLabelValues("error").Inc()
		s.failed(id, err, now)
	}
}

// resolve returns sch as a decode.Schema, its references fetched,
// dependencies first.
func (s *Source) resolve(ctx context.Context, sch sr.Schema) (decode.Schema, error) {
	f, err := format(sch.Type)
	if err != nil {
		return decode.Schema{}, err
	}
	out := decode.Schema{Format: f, Text: sch.Schema}
	seen := map[sr.SchemaReference]bool{}
	var add func(refs []sr.SchemaReference, depth int) error
	add = func(refs []sr.SchemaReference, depth int) error {
		if depth > maxReferenceDepth {
			return fmt.Errorf("references nested deeper than %d", maxReferenceDepth)
		}
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			ss, err := s.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
			if err != nil {
				return fmt.Errorf("reference %s (%s version %d): %w", ref.Name, ref.Subject, ref.Version, err)
			}
			if err := add(ss.References, depth+1); err != nil {
				return err
			}
			out.References = append(out.References, decode.Reference{Name: ref.Name, Text: ss.Schema.Schema})
		}
		return nil
	}
	return out, add(sch.References, 1)
}

// maxReferenceDepth bounds a chain of references.
const maxReferenceDepth = 16

// format returns the decode.Format of a registry schema type.
func format(t sr.SchemaType) (decode.Format, error) {
	switch t {
	case sr.TypeAvro:
		return decode.FormatAvro, nil
	case sr.TypeProtobuf:
		return decode.FormatProtobuf, nil
	case sr.TypeJSON:
		return decode.FormatJSON, nil
	}
	return 0, fmt.Errorf("schema type %v", t)
}

// up notes an answer of the registry. s.mu is held.
func (s *Source) up(now time.Time) {
	s.m.up.Set(1)
	if s.down {
		s.cfg.log.Info().Dur("after", now.Sub(s.downSince)).Msg("schema registry reachable again: held records resume")
	}
	s.down, s.lastErr = false, nil
}

// failed notes a failed fetch. s.mu is held.
func (s *Source) failed(id int, err error, now time.Time) {
	s.m.up.Set(0)
	if !s.down {
		s.down, s.downSince = true, now
		s.cfg.log.Warn().Err(err).Int("schema_id", id).
			Msg("schema registry unreachable: records of schemas not yet fetched are held (not dead-lettered) and retried")
	} else {
		s.cfg.log.Debug().Err(err).Int("schema_id", id).Msg("schema registry still unreachable")
	}
	s.lastErr = err
}

// ErrUnreachable is wrapped by Ready's error while the registry cannot be
// reached.
var ErrUnreachable = errors.New("schema registry unreachable")

// Ready is nil unless the last fetch from the registry failed (for
// /readyz): records whose schemas the worker has not fetched yet wait.
func (s *Source) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return fmt.Errorf("%w since %s: %v", ErrUnreachable, s.downSince.Format(time.RFC3339), s.lastErr)
	}
	return nil
}
