package schemaregistry

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/testsupport/testwait"
)

const testAvro = `{"type":"record","name":"E","fields":[{"name":"campaign","type":"string"}]}`

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startRegistry starts a registry that counts the requests for schemas.
func startRegistry(t *testing.T) (*Server, *atomic.Int64) {
	t.Helper()
	srv, err := StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var n atomic.Int64
	srv.Registry().Intercept(func(http.ResponseWriter, *http.Request) bool { n.Add(1); return false })
	return srv, &n
}

func register(t *testing.T, srv *Server, subject string, s sr.Schema) int {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(context.Background(), subject, s)
	if err != nil {
		t.Fatal(err)
	}
	return ss.ID
}

func TestSourceFetchesOnce(t *testing.T) {
	srv, requests := startRegistry(t)
	id := register(t, srv, "events-value", sr.Schema{Schema: testAvro, Type: sr.TypeAvro})
	register(t, srv, "common", sr.Schema{Schema: "syntax = \"proto3\";\nmessage U { string id = 1; }\n", Type: sr.TypeProtobuf})
	pid := register(t, srv, "clicks-value", sr.Schema{Type: sr.TypeProtobuf,
		Schema:     "syntax = \"proto3\";\nimport \"common.proto\";\nmessage C { U user = 1; }\n",
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "common", Version: 1}}})
	s, err := New([]string{srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	for range 3 {
		got, err := s.Schema(id)
		if err != nil || got.Format != decode.FormatAvro || got.Text != testAvro {
			t.Fatalf("Schema(%d) = %+v, %v", id, got, err)
		}
	}
	if n := requests.Load() - before; n != 1 {
		t.Errorf("%d requests for three lookups of one id", n)
	}
	got, err := s.Schema(pid)
	if err != nil || got.Format != decode.FormatProtobuf || len(got.References) != 1 || got.References[0].Name != "common.proto" {
		t.Fatalf("Schema(%d) = %+v, %v", pid, got, err)
	}
	// The decoder compiles it with its reference.
	d, err := decode.NewDecoder(decode.WithFormat(decode.FormatProtobuf), decode.WithSchemas(s), decode.Paths("user.id"))
	if err != nil {
		t.Fatal(err)
	}
	v := append([]byte{0, 0, 0, 0, byte(pid), 0}, 0x0a, 0x03, 0x0a, 0x01, 'x') // C{user: U{id: "x"}}
	var dd decode.Decoded
	err = d.DecodeWith(nil, v, time.Time{}, &dd, d.NewScan("t"))
	if f := dd.Field(v, "user.id"); !errors.Is(err, decode.ErrBadRecord) || f.Str != "x" {
		t.Fatalf("decode: %v (want missing_budget), user.id %+v", err, f)
	}
}

func TestSourceUnknownID(t *testing.T) {
	srv, requests := startRegistry(t)
	c := &clock{t: time.Unix(1000, 0)}
	s, err := New([]string{srv.URL()}, WithClock(c.now), UnknownFor(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Schema(42); !errors.Is(err, decode.ErrUnknownSchema) {
			t.Fatalf("unknown id: %v", err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests within UnknownFor", n)
	}
	c.add(11 * time.Second)
	if _, err := s.Schema(42); !errors.Is(err, decode.ErrUnknownSchema) || requests.Load() != 2 {
		t.Errorf("after UnknownFor: %v, %d requests", err, requests.Load())
	}
	if err := s.Ready(); err != nil {
		t.Errorf("an unknown id makes the registry unready: %v", err)
	}
}

// TestSourceOutage stops the registry: ids not fetched yet are not
// available (never unknown), with growing backoff, and Ready says so;
// once it is back, the next try after the backoff gets the schema.
func TestSourceOutage(t *testing.T) {
	srv, requests := startRegistry(t)
	id := register(t, srv, "events-value", sr.Schema{Schema: testAvro, Type: sr.TypeAvro})
	c := &clock{t: time.Unix(1000, 0)}
	s, err := New([]string{srv.URL()}, WithClock(c.now), Backoff(100*time.Millisecond, 400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	wantAfter := []time.Duration{100, 200, 400, 400}
	for i, after := range wantAfter {
		_, err := s.Schema(id)
		var ra interface{ RetryAfter() time.Duration }
		if !errors.As(err, &ra) || errors.Is(err, decode.ErrUnknownSchema) || ra.RetryAfter() != after*time.Millisecond {
			t.Fatalf("fetch %d: %v, want a retry in %v", i+1, err, after*time.Millisecond)
		}
		n := requests.Load()
		if _, err := s.Schema(id); err == nil || requests.Load() != n {
			t.Fatalf("asked again within the backoff: %v", err)
		}
		c.add(after * time.Millisecond)
	}
	if err := s.Ready(); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Ready during the outage: %v", err)
	}
	if v := testutil.ToFloat64(s.m.up); v != 0 {
		t.Errorf("up = %v during the outage", v)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Schema(id); err != nil || got.Text != testAvro {
		t.Fatalf("after the outage: %+v, %v", got, err)
	}
	if err := s.Ready(); err != nil {
		t.Errorf("Ready after the outage: %v", err)
	}
	if v := testutil.ToFloat64(s.m.waits); v < 4 {
		t.Errorf("waits = %v", v)
	}
}

// TestSourceSlow answers "not yet" when the registry takes longer than
// Wait, and the schema once the fetch ends.
func TestSourceSlow(t *testing.T) {
	srv, _ := startRegistry(t)
	id := register(t, srv, "events-value", sr.Schema{Schema: testAvro, Type: sr.TypeAvro})
	release := make(chan struct{})
	srv.Registry().Intercept(func(http.ResponseWriter, *http.Request) bool { <-release; return false })
	s, err := New([]string{srv.URL()}, Wait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first call and one during the same fetch
		_, err = s.Schema(id)
		if ra, ok := err.(interface{ RetryAfter() time.Duration }); !ok || ra.RetryAfter() <= 0 {
			t.Fatalf("a slow registry: %v", err)
		}
	}
	close(release)
	testwait.Eventually(t, "the schema once the registry answers", func() bool {
		_, err := s.Schema(id)
		return err == nil
	})
}

// TestSourceManyUnknownIDs asks for 500 distinct ids the registry does not
// have, in virtual time: at most the Lookups burst of requests goes out at
// once (the other ids wait, answered as not available yet, never as
// unknown), the ids kept stay within MaxIDs, and as time passes every id
// is looked up in turn at the Lookups rate.
func TestSourceManyUnknownIDs(t *testing.T) {
	srv, requests := startRegistry(t)
	c := &clock{t: time.Unix(1000, 0)}
	s, err := New([]string{srv.URL()}, WithClock(c.now), MaxIDs(64), Lookups(10, 20), Wait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	unknown, waiting := 0, 0
	for id := 1000; id < 1500; id++ {
		_, err := s.Schema(id)
		var ra interface{ RetryAfter() time.Duration }
		switch {
		case errors.Is(err, decode.ErrUnknownSchema):
			unknown++
		case errors.As(err, &ra) && ra.RetryAfter() > 0:
			waiting++
		default:
			t.Fatalf("id %d: %v", id, err)
		}
	}
	if n := requests.Load() - before; unknown != 20 || waiting != 480 || n != 20 {
		t.Fatalf("at once: %d unknown, %d waiting, %d requests; want 20, 480, 20", unknown, waiting, n)
	}
	// A second later, ten more.
	c.add(time.Second)
	for id := 1020; id < 1500; id++ {
		_, _ = s.Schema(id)
	}
	s.mu.Lock()
	kept := s.ids.Len()
	s.mu.Unlock()
	if n := requests.Load() - before; n != 30 || kept > 64 {
		t.Fatalf("after a second: %d requests (want 30), %d ids kept (at most 64)", n, kept)
	}
}
