// Package kafkaconn is the one place where throttler's Kafka connection
// options are made: seed brokers, TLS and SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), from a config.Security section or the equivalent
// command-line flags. Every client (workers, stats view, ledger
// loading, topic creation, load generator, status commands) is built from
// Opts, so that a cluster with authentication is reached the same way
// everywhere.
//
// kafkacheck.Check then reaches the brokers once with these options.
package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/throttler/throttler/config"
)

// FromConfig returns the connection options of a worker config: Opts of
// its brokers and security section.
func FromConfig(c *config.Config) ([]kgo.Opt, error) {
	return Opts(c.Brokers, c.Security)
}

// Opts returns the kgo options that reach brokers with sec. The error is
// a *config.FieldProblem naming the field of sec at fault ("tls.ca_file",
// "sasl.password_file", …).
func Opts(brokers []string, sec config.Security) ([]kgo.Opt, error) {
	if ps := sec.Check(); len(ps) > 0 {
		return nil, &ps[0]
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if sec.TLS.On() {
		tc, err := TLSConfig(sec.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if sec.SASL.On() {
		m, err := Mechanism(sec.SASL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TLSConfig returns the client TLS configuration of t. The error is a
// *config.FieldProblem.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, documented as for tests
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &config.FieldProblem{Field: "tls.ca_file", Reason: fmt.Sprintf("cannot read: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &config.FieldProblem{Field: "tls.ca_file", Reason: "holds no PEM certificate"}
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &config.FieldProblem{Field: "tls.cert_file", Reason: fmt.Sprintf("cannot load the key pair: %v", err)}
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Mechanism returns the SASL mechanism of s, which must be on. The error
// is a *config.FieldProblem.
func Mechanism(s config.SASL) (sasl.Mechanism, error) {
	pass, p := s.ResolvePassword()
	if p != nil {
		p.Field = "sasl." + p.Field
		return nil, p
	}
	var m sasl.Mechanism
	switch s.MechanismName() {
	case config.SASLPlain:
		m = plain.Auth{User: s.Username, Pass: pass}.AsMechanism()
	case config.SASLScramSHA256:
		m = scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism()
	case config.SASLScramSHA512:
		m = scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism()
	default:
		return nil, &config.FieldProblem{Field: "sasl.mechanism", Reason: fmt.Sprintf("unknown mechanism %q", s.Mechanism)}
	}
	return userMechanism{Mechanism: m, user: s.Username}, nil
}

// userMechanism remembers the user, for the messages of
// kafkacheck.Check.
type userMechanism struct {
	sasl.Mechanism
	user string
}

// User returns the SASL user name.
func (m userMechanism) User() string { return m.user }
