package schemaregistry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// Server is a schema registry in the process, for tests and the demo:
// franz-go's srfake (the registry REST API over memory: schemas by id,
// subjects and versions, references) served on a listener of ours, so
// that it can be stopped and started again on the same address to play an
// outage. It is not for production: nothing is persisted.
type Server struct {
	reg  *srfake.Registry
	addr string

	mu  sync.Mutex
	srv *http.Server
}

// StartServer starts a registry listening on addr ("127.0.0.1:0" picks a
// free port; see URL).
func StartServer(addr string) (*Server, error) {
	s := &Server{reg: srfake.NewRegistry(), addr: addr}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Registry returns the registry's state, to seed or inspect it, and to
// intercept requests (srfake.Registry.Intercept).
func (s *Server) Registry() *srfake.Registry { return s.reg }

// URL returns the registry's base URL.
func (s *Server) URL() string { return "http://" + s.addr }

// Start serves again after Stop, on the same address (the first start
// picks it). Starting a running server does nothing.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: s.reg.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.srv = srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return nil
}

// Stop stops serving: connections are closed and new ones refused until
// Start.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	s.srv = nil
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }
