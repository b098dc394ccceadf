package httpguard

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/throttler/throttler/internal/testsupport/testcert"
)

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }

// TestHostCheck: loopback names and IP literals are served, a name an
// attacker could point at the address (DNS rebinding) is not, unless
// allowed.
func TestHostCheck(t *testing.T) {
	h := Handler(http.HandlerFunc(ok), Options{AllowedHosts: []string{"throttler.example.com"}})
	for host, want := range map[string]int{
		"127.0.0.1:9090":             200,
		"[::1]:9090":                 200,
		"10.1.2.3":                   200,
		"localhost:9090":             200,
		"app.localhost":              200,
		"throttler.example.com:9090": 200,
		"THROTTLER.example.com.":     200,
		"attacker.example.net:9090":  421,
		"":                           421,
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
		for _, k := range []string{"X-Content-Type-Options", "Content-Security-Policy", "X-Frame-Options"} {
			if w.Header().Get(k) == "" {
				t.Errorf("Host %q: no %s", host, k)
			}
		}
	}
}

// TestAuth: with credentials set, every path but the open ones needs
// them (basic or bearer).
func TestAuth(t *testing.T) {
	if err := (&Auth{User: "u"}).Check(); err == nil {
		t.Fatal("a user without a password is usable")
	}
	h := Handler(http.HandlerFunc(ok), Options{Auth: &Auth{User: "ops", Password: "pw", Token: "tok"}, Open: []string{"/livez"}})
	for _, c := range []struct {
		path, user, pass, bearer string
		want                     int
	}{
		{"/metrics", "", "", "", 401},
		{"/metrics", "ops", "wrong", "", 401},
		{"/metrics", "ops", "pw", "", 200},
		{"/metrics", "", "", "tok", 200},
		{"/metrics", "", "", "tok2", 401},
		{"/livez", "", "", "", 200},
	} {
		r := httptest.NewRequest("GET", c.path, nil)
		r.Host = "127.0.0.1:9090"
		if c.user != "" {
			r.SetBasicAuth(c.user, c.pass)
		}
		if c.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+c.bearer)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%+v: %d", c, w.Code)
		}
	}
}

// TestTLS serves over TLS with a throwaway certificate.
func TestTLS(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{CertFile: files.Cert, KeyFile: files.Key}
	ln, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	srv := Server(http.HandlerFunc(ok), o)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ca, _ := os.ReadFile(files.CA)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := cl.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP served on a TLS listener")
	}
}
