package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTTPSection checks the http section: TLS files both or neither,
// authentication complete, secrets from files or variables.
func TestHTTPSection(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("THROTTLER_TEST_HTTP_PASSWORD", "pw")
	cases := []struct {
		name string
		h    HTTP
		want []want
	}{
		{"defaults", HTTP{Listen: "127.0.0.1:9090"}, nil},
		{"cert without key", HTTP{Listen: ":9090", TLS: HTTPTLS{CertFile: secret}}, []want{{"http.tls", "both"}}},
		{"unreadable cert", HTTP{Listen: ":9090", TLS: HTTPTLS{CertFile: dir + "/nope", KeyFile: secret}}, []want{{"http.tls.cert_file", "cannot read"}}},
		{"token file", HTTP{Listen: ":9090", Auth: HTTPAuth{TokenFile: secret}}, nil},
		{"user and password", HTTP{Listen: ":9090", Auth: HTTPAuth{User: "ops", PasswordEnv: "THROTTLER_TEST_HTTP_PASSWORD"}}, nil},
		{"user without password", HTTP{Listen: ":9090", Auth: HTTPAuth{User: "ops"}}, []want{{"http.auth.user", "needs a password"}}},
		{"unset variable", HTTP{Listen: ":9090", Auth: HTTPAuth{TokenEnv: "THROTTLER_TEST_NOT_SET"}}, []want{{"http.auth.token_env", "not set"}}},
		{"host with port", HTTP{Listen: ":9090", AllowedHosts: []string{"a.example:80"}}, []want{{"http.allowed_hosts[0]", "without port"}}},
		{"negative budget series", HTTP{Listen: ":9090", BudgetSeries: -1}, []want{{"http.budget_series", "at least 1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := example(t)
			cfg.HTTP = c.h
			checkProblems(t, cfg.Validate(), c.want...)
		})
	}
	if pw, tok, p := (HTTPAuth{TokenFile: secret}).Resolve(); p != nil || tok != "s3cret" || pw != "" {
		t.Fatalf("Resolve: %q %q %v", pw, tok, p)
	}
}

// TestSecretWarnings: a secret file readable by group or others is
// named; one of mode 0600 is not.
func TestSecretWarnings(t *testing.T) {
	dir := t.TempDir()
	open, closed := filepath.Join(dir, "open"), filepath.Join(dir, "closed")
	for path, mode := range map[string]os.FileMode{open: 0o644, closed: 0o600} {
		if err := os.WriteFile(path, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	c := &Config{}
	c.Security.SASL.PasswordFile = open
	c.HTTP.Auth.TokenFile = closed
	ws := c.SecretWarnings()
	if len(ws) != 1 || !strings.Contains(ws[0], open) || !strings.Contains(ws[0], "0644") {
		t.Fatalf("warnings %q", ws)
	}
}

// TestRegistryURLRedacted: a bad registry URL is reported without the
// password it carries.
func TestRegistryURLRedacted(t *testing.T) {
	c := example(t)
	c.Format.Topics = []TopicFormat{{Topic: c.Topics.Input[0], Format: FormatAvro}}
	c.SchemaRegistry.URLs = []string{"ftp://alice:s3cretPW@registry:8081", "http://bob:hunter2@%zz"}
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), "s3cretPW") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("problems echo a password: %v", err)
	}
}
