package kafkaconn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/kafkacheck"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/testsupport/testcert"
	"github.com/throttler/throttler/internal/tools/broker"
)

// checkTimeout is what each Check may take. A refused credential must
// come back as an AuthError, not as this timeout running out.
const checkTimeout = 20 * time.Second

func startBroker(t *testing.T, opts ...broker.Opt) *broker.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b, err := broker.Start(ctx, append([]broker.Opt{broker.Addr("127.0.0.1:0"), broker.SeedTopics("events")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func check(t *testing.T, b *broker.Broker, sec config.Security) error {
	t.Helper()
	opts, err := kafkaconn.Opts(b.Addrs(), sec)
	if err != nil {
		t.Fatalf("Opts: %v", err)
	}
	return kafkacheck.Check(context.Background(), opts, checkTimeout)
}

func sasl(mech, user, pass string) config.Security {
	return config.Security{SASL: config.SASL{Mechanism: mech, Username: user, Password: pass}}
}

// TestSASL checks each mechanism against a broker with SASL on: the right
// credentials connect; a wrong password, a wrong mechanism, an unknown
// user or no SASL at all give an AuthError that names the user and
// mechanism, well before the check's timeout.
func TestSASL(t *testing.T) {
	b := startBroker(t, broker.Users(
		broker.SASLUser{Mechanism: "SCRAM-SHA-256", User: "alice", Password: "a-secret"},
		broker.SASLUser{Mechanism: "SCRAM-SHA-512", User: "bob", Password: "b-secret"},
		broker.SASLUser{Mechanism: "PLAIN", User: "carol", Password: "c-secret"},
	))
	for _, ok := range []config.Security{
		sasl("SCRAM-SHA-256", "alice", "a-secret"),
		sasl("scram-sha-512", "bob", "b-secret"),
		sasl("PLAIN", "carol", "c-secret"),
	} {
		if err := check(t, b, ok); err != nil {
			t.Errorf("%s as %s: %v", ok.SASL.Mechanism, ok.SASL.Username, err)
		}
	}
	for _, bad := range []struct {
		name string
		sec  config.Security
		want string
	}{
		{"wrong password scram-256", sasl("SCRAM-SHA-256", "alice", "wrong"), `user "alice" with mechanism SCRAM-SHA-256`},
		{"wrong password scram-512", sasl("SCRAM-SHA-512", "bob", "wrong"), `user "bob" with mechanism SCRAM-SHA-512`},
		{"wrong password plain", sasl("PLAIN", "carol", "wrong"), `user "carol" with mechanism PLAIN`},
		{"mechanism not enabled for the user", sasl("SCRAM-SHA-512", "alice", "a-secret"), `user "alice" with mechanism SCRAM-SHA-512`},
		{"unknown user", sasl("PLAIN", "mallory", "x"), `user "mallory"`},
		{"no SASL", config.Security{}, "requires SASL authentication and none is configured"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			start := time.Now()
			err := check(t, b, bad.sec)
			var ae *kafkacheck.AuthError
			if !errors.As(err, &ae) || !kafkacheck.Fatal(err) {
				t.Fatalf("got %T %v after %v, want an AuthError", err, err, time.Since(start))
			}
			if !strings.Contains(err.Error(), bad.want) {
				t.Errorf("error %q does not contain %q", err, bad.want)
			}
			t.Logf("%v: %v", time.Since(start), err)
		})
	}
}

// TestTLS checks a TLS broker: a client trusting its CA connects (with
// SASL too); a client without the CA, a plaintext client, and a TLS
// client of a plaintext broker get a TLSError.
func TestTLS(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, broker.TLS(files.Cert, files.Key),
		broker.Users(broker.SASLUser{Mechanism: "SCRAM-SHA-512", User: "alice", Password: "a-secret"}))
	good := sasl("SCRAM-SHA-512", "alice", "a-secret")
	good.TLS.CAFile = files.CA
	if err := check(t, b, good); err != nil {
		t.Fatalf("TLS with the CA: %v", err)
	}
	wrongPass := good
	wrongPass.SASL.Password = "nope"
	if err := check(t, b, wrongPass); !errors.As(err, new(*kafkacheck.AuthError)) {
		t.Errorf("TLS, wrong password: got %T %v, want an AuthError", err, err)
	}
	noCA := sasl("SCRAM-SHA-512", "alice", "a-secret")
	noCA.TLS.Enabled = true
	plain := sasl("SCRAM-SHA-512", "alice", "a-secret")
	for name, sec := range map[string]config.Security{"system roots": noCA, "plaintext client": plain} {
		if err := check(t, b, sec); !errors.As(err, new(*kafkacheck.TLSError)) {
			t.Errorf("%s: got %T %v, want a TLSError", name, err, err)
		}
	}
	p := startBroker(t)
	tlsToPlain := config.Security{TLS: config.TLS{CAFile: files.CA}}
	if err := check(t, p, tlsToPlain); !errors.As(err, new(*kafkacheck.TLSError)) {
		t.Errorf("TLS client, plaintext broker: got %T %v, want a TLSError", err, err)
	}
}

// TestOptsErrors checks that a bad security section names its field.
func TestOptsErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sec   config.Security
		field string
	}{
		{config.Security{TLS: config.TLS{CAFile: filepath.Join(dir, "missing.pem")}}, "tls.ca_file"},
		{config.Security{TLS: config.TLS{CAFile: junk}}, "tls.ca_file"},
		{config.Security{TLS: config.TLS{CertFile: junk, KeyFile: junk}}, "tls.cert_file"},
		{config.Security{TLS: config.TLS{CertFile: junk}}, "tls.key_file"},
		{sasl("GSSAPI", "u", "p"), "sasl.mechanism"},
		{sasl("PLAIN", "", "p"), "sasl.username"},
		{sasl("PLAIN", "u", ""), "sasl.password"},
		{config.Security{SASL: config.SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "THROTTLER_TEST_UNSET_VARIABLE"}}, "sasl.password_env"},
		{config.Security{SASL: config.SASL{Mechanism: "PLAIN", Username: "u", PasswordFile: filepath.Join(dir, "none")}}, "sasl.password_file"},
		{config.Security{SASL: config.SASL{Username: "u"}}, "sasl.username"},
	} {
		_, err := kafkaconn.Opts([]string{"127.0.0.1:9092"}, c.sec)
		var fp *config.FieldProblem
		if !errors.As(err, &fp) || fp.Field != c.field || fp.Reason == "" {
			t.Errorf("%+v: got %v, want a problem with %s", c.sec, err, c.field)
		}
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := config.SASL{Mechanism: "PLAIN", Username: "u", PasswordFile: pw}
	if got, p := s.ResolvePassword(); p != nil || got != "secret" {
		t.Errorf("password file: got %q, %v", got, p)
	}
}
