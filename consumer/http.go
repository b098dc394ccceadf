package consumer

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttler/throttler/internal/httpguard"
)

// Health is what the HTTP server asks about liveness and readiness; a nil
// error means yes. Worker implements it.
type Health interface {
	Live() error
	Ready() error
}

// HTTPSecurity guards the worker's HTTP server (HTTPGuard). The zero value
// is plain HTTP without authentication, answering requests that name the
// server by an IP address or a loopback name only.
type HTTPSecurity struct {
	// AllowedHosts are more names the server may be reached by (a
	// request naming another is refused, against DNS rebinding).
	AllowedHosts []string
	// User and Password (HTTP basic), or Token (bearer), or both, make
	// /metrics require credentials; /livez and /readyz stay open.
	User, Password, Token string
	// CertFile and KeyFile make the server speak TLS only.
	CertFile, KeyFile string
}

func (s HTTPSecurity) options() (httpguard.Options, error) {
	o := httpguard.Options{AllowedHosts: s.AllowedHosts, CertFile: s.CertFile, KeyFile: s.KeyFile, Open: []string{"/livez", "/readyz"}}
	if s.User != "" || s.Password != "" || s.Token != "" {
		o.Auth = &httpguard.Auth{User: s.User, Password: s.Password, Token: s.Token}
		if err := o.Auth.Check(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// HTTPServer serves /metrics, /livez and /readyz.
type HTTPServer struct {
	ln  net.Listener
	srv *http.Server
}

// NewHTTPServer listens on addr (":0" picks a free port) at once, so that
// Addr is known before Serve. The server has the timeouts, headers and
// Host check of internal/httpguard, and sec's TLS and credentials.
func NewHTTPServer(addr string, g prometheus.Gatherer, h Health, sec HTTPSecurity) (*HTTPServer, error) {
	o, err := sec.options()
	if err != nil {
		return nil, &ConfigError{Option: "HTTPGuard", Reason: err.Error()}
	}
	ln, err := httpguard.Listen(addr, o)
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
	return &HTTPServer{ln: ln, srv: httpguard.Server(mux, o)}, nil
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
