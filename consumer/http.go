package consumer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health is what the HTTP server asks about liveness and readiness; a nil
// error means yes. Worker implements it.
type Health interface {
	Live() error
	Ready() error
}

// HTTPServer serves /metrics, /livez and /readyz.
type HTTPServer struct {
	ln  net.Listener
	srv *http.Server
}

// NewHTTPServer listens on addr (":0" picks a free port) at once, so that
// Addr is known before Serve.
func NewHTTPServer(addr string, g prometheus.Gatherer, h Health) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ConfigError{Option: "HTTPListen", Reason: err.Error()}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	probe := func(check func() error) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := check(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(err.Error() + "\n"))
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		}
	}
	mux.Handle("/livez", probe(h.Live))
	mux.Handle("/readyz", probe(h.Ready))
	return &HTTPServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}, nil
}

// Addr returns the address the server listens on.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown; it then returns nil.
func (s *HTTPServer) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server, waiting for requests in progress until ctx
// ends.
func (s *HTTPServer) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
