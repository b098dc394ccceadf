// Package httpguard is what every HTTP server of throttler (a worker's
// /metrics and health probes, the dashboard) puts around its handler:
// timeouts, security headers, a Host check against DNS rebinding, and
// optional TLS and authentication. See docs/operations.md, "HTTP
// endpoints".
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Timeouts of a guarded server. A request must send its headers within
// ReadHeaderTimeout and its body within ReadTimeout; an answer must be
// written within WriteTimeout (an event stream lifts it for itself:
// StreamDeadline); a kept-alive connection idle for IdleTimeout closes.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 60 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// DefaultCSP is the Content-Security-Policy of answers without one of
// their own: nothing loads, nothing frames them.
const DefaultCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Options configure Handler and Server. The zero value guards a plain
// HTTP server without authentication that answers loopback names and IP
// literals only.
type Options struct {
	// AllowedHosts are the host names (without port) a request's Host
	// may carry besides "localhost", names under ".localhost" and IP
	// literals: the names the server is reached by. A name not listed is
	// refused (421), so that a page of another site whose name an
	// attacker points at this address (DNS rebinding) cannot read it.
	AllowedHosts []string
	// Auth, when not nil, is required of every request but those of
	// Open.
	Auth *Auth
	// Open are the paths served without authentication (health probes).
	Open []string
	// CSP is the Content-Security-Policy of answers that set none
	// themselves; "" means DefaultCSP.
	CSP string
	// CertFile and KeyFile, when set, make the server speak TLS only.
	CertFile, KeyFile string
}

// Auth is the credentials a guarded server requires: HTTP basic (User and
// Password) or a bearer token (Token), or either when both are set.
type Auth struct {
	User, Password string
	Token          string
}

// ErrNoCredentials is returned by Auth.Check when neither a user and
// password nor a token is set.
var ErrNoCredentials = errors.New("authentication needs a user and password, or a token")

// Check reports whether a is usable.
func (a *Auth) Check() error {
	if (a.User == "" || a.Password == "") && a.Token == "" {
		return ErrNoCredentials
	}
	return nil
}

// allows reports whether r carries a's credentials. Comparisons take the
// same time whatever the guess (of digests: lengths do not leak either).
func (a *Auth) allows(r *http.Request) bool {
	same := func(got, want string) bool {
		g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
		return subtle.ConstantTimeCompare(g[:], w[:]) == 1
	}
	if a.Token != "" {
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") && same(h[7:], a.Token) {
			return true
		}
	}
	if a.User != "" && a.Password != "" {
		if u, p, ok := r.BasicAuth(); ok && same(u, a.User) && same(p, a.Password) {
			return true
		}
	}
	return false
}

// Handler returns h behind the guard: a request whose Host is not
// allowed gets 421, one without the credentials 401, and every answer
// carries X-Content-Type-Options: nosniff, X-Frame-Options: DENY,
// Referrer-Policy: no-referrer and the Content-Security-Policy (unless
// h sets its own).
func Handler(h http.Handler, o Options) http.Handler {
	csp := o.CSP
	if csp == "" {
		csp = DefaultCSP
	}
	allowed := map[string]bool{}
	for _, a := range o.AllowedHosts {
		allowed[strings.ToLower(strings.TrimSuffix(a, "."))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Content-Security-Policy", csp)
		if !hostAllowed(r.Host, allowed) {
			http.Error(w, "host not allowed (see docs/operations.md, HTTP endpoints: allowed_hosts)", http.StatusMisdirectedRequest)
			return
		}
		if o.Auth != nil && !slices.Contains(o.Open, r.URL.Path) && !o.Auth.allows(r) {
			if o.Auth.User != "" {
				hd.Set("WWW-Authenticate", `Basic realm="throttler", charset="UTF-8"`)
			} else {
				hd.Set("WWW-Authenticate", `Bearer realm="throttler"`)
			}
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a Host header names this server: an IP
// literal (no DNS, so no rebinding), "localhost" or a name under
// ".localhost" (which resolve to loopback only), or an allowed name.
func hostAllowed(host string, allowed map[string]bool) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	switch {
	case host == "":
		return false
	case net.ParseIP(host) != nil:
		return true
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true
	}
	return allowed[host]
}

// Server returns an http.Server of h (behind Handler) with the package's
// timeouts and header bound.
func Server(h http.Handler, o Options) *http.Server {
	return &http.Server{
		Handler:           Handler(h, o),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// Listen listens on addr, with TLS when o has a certificate (TLS 1.2 at
// least).
func Listen(addr string, o Options) (net.Listener, error) {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	var cfg *tls.Config
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		return tls.NewListener(ln, cfg), nil
	}
	return ln, nil
}

// StreamDeadline lifts the server's WriteTimeout for a long answer (an
// event stream): it sets w's write deadline d from now, and is called
// again before each write, so that a stream lives as long as its client
// reads, and a client that stops reading is cut after d.
func StreamDeadline(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
