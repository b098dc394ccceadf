package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSecurityProblems checks that every bad security section is reported
// with its field path and line, and that a good one parses.
func TestSecurityProblems(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name, yaml string
		want       []want
	}{
		{"unknown mechanism", "sasl: {mechanism: GSSAPI, username: u, password: p}", []want{{"security.sasl.mechanism", `got "GSSAPI"`}}},
		{"no user", "sasl: {mechanism: PLAIN, password: p}", []want{{"security.sasl.username", "is required with sasl.mechanism"}}},
		{"no password", "sasl: {mechanism: SCRAM-SHA-256, username: u}", []want{{"security.sasl.password", "is required with sasl.mechanism"}}},
		{"two passwords", "sasl: {mechanism: PLAIN, username: u, password: p, password_env: HOME}", []want{{"security.sasl.password", "set one of"}}},
		{"password env unset", "sasl: {mechanism: PLAIN, username: u, password_env: THROTTLER_TEST_UNSET}", []want{{"security.sasl.password_env", "not set"}}},
		{"password file missing", "sasl: {mechanism: PLAIN, username: u, password_file: " + missing + "}", []want{{"security.sasl.password_file", "cannot read"}}},
		{"user without mechanism", "sasl: {username: u}", []want{{"security.sasl.username", "sasl.mechanism is empty"}}},
		{"ca file missing", "tls: {ca_file: " + missing + "}", []want{{"security.tls.ca_file", "cannot read"}}},
		{"ca file a directory", "tls: {ca_file: " + dir + "}", []want{{"security.tls.ca_file", "not a regular file"}}},
		{"password file a device", "sasl: {mechanism: PLAIN, username: u, password_file: /dev/zero}", []want{{"security.sasl.password_file", "not a regular file"}}},
		{"cert without key", "tls: {cert_file: " + ca + "}", []want{{"security.tls.key_file", "is required with tls.cert_file"}}},
		{"key without cert", "tls: {key_file: " + ca + "}", []want{{"security.tls.cert_file", "is required with tls.key_file"}}},
		{"good", "tls: {ca_file: " + ca + "}\n  sasl: {mechanism: scram-sha-512, username: u, password: p}", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal + "security:\n  " + c.yaml + "\n"))
			ps := checkProblems(t, err, c.want...)
			for _, p := range ps {
				if p.Line < 11 {
					t.Errorf("%s: line %d, want the security section's", p.Path, p.Line)
				}
			}
		})
	}
	if _, err := Parse([]byte(minimal + "security: {sasl: {mechanism: PLAIN, usr: u}}\n")); err == nil {
		t.Error("unknown field under security accepted")
	}
}
