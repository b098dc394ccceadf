package config

import (
	"fmt"
	"os"
	"strings"
)

// Security says how every Kafka client of throttler (workers, stats view,
// ledger loading, topic creation, load generator, status commands)
// encrypts and authenticates its connections. The zero value is plaintext
// without authentication. internal/kafkaconn turns it into kgo options.
type Security struct {
	// TLS encrypts the connections.
	TLS TLS `yaml:"tls"`
	// SASL authenticates them.
	SASL SASL `yaml:"sasl"`
}

// TLS configures TLS to the brokers. Setting any file or the server name
// turns it on.
type TLS struct {
	// Enabled turns TLS on with the system's root certificates. Default
	// false, unless another TLS field is set.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the certificate authorities the brokers'
	// certificates are checked against. Default: the system's roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's PEM certificate and key, for
	// brokers that require client certificates (mutual TLS). Both or
	// neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the brokers' certificates must carry.
	// Default: the host of the address dialled.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate. For tests only.
	// Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// On reports whether TLS is used.
func (t TLS) On() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLMechanisms lists the mechanisms SASL.Mechanism accepts.
var SASLMechanisms = []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}

// SASL configures SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any case).
	// Default "": no SASL.
	Mechanism string `yaml:"mechanism"`
	// Username is the SASL user. Required with a mechanism.
	Username string `yaml:"username"`
	// Password is the user's password. Exactly one of Password,
	// PasswordFile and PasswordEnv is required with a mechanism.
	Password string `yaml:"password"`
	// PasswordFile is a file holding the password (a trailing newline is
	// ignored), e.g. a mounted secret.
	PasswordFile string `yaml:"password_file"`
	// PasswordEnv names an environment variable holding the password.
	PasswordEnv string `yaml:"password_env"`
}

// On reports whether SASL is used.
func (s SASL) On() bool { return s.Mechanism != "" }

// MechanismName returns Mechanism in its canonical (upper) case.
func (s SASL) MechanismName() string { return strings.ToUpper(s.Mechanism) }

// ResolvePassword returns the password from Password, PasswordFile or
// PasswordEnv. The error names the field at fault (relative to the sasl
// section: "password_file", "password_env").
func (s SASL) ResolvePassword() (string, *FieldProblem) {
	switch {
	case s.PasswordFile != "":
		b, err := readRegular(s.PasswordFile)
		if err != nil {
			return "", &FieldProblem{"password_file", fmt.Sprintf("cannot read the password: %v", err)}
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	case s.PasswordEnv != "":
		p, ok := os.LookupEnv(s.PasswordEnv)
		if !ok {
			return "", &FieldProblem{"password_env", fmt.Sprintf("environment variable %s is not set", s.PasswordEnv)}
		}
		return p, nil
	}
	return s.Password, nil
}

// FieldProblem is a problem with one field of a section, the field named
// relative to the section ("tls.ca_file" within security). Commands that
// take the section as flags map Field to a flag name.
type FieldProblem struct {
	Field  string
	Reason string
}

func (p *FieldProblem) Error() string { return p.Field + ": " + p.Reason }

// Check returns every problem of the security section, fields named
// relative to it ("tls.ca_file", "sasl.username"). It reads the files the
// section names, so that a missing or unreadable file is reported before
// anything starts.
func (s Security) Check() []FieldProblem {
	var ps []FieldProblem
	add := func(field, reason string) { ps = append(ps, FieldProblem{field, reason}) }
	t := s.TLS
	readable := func(field, path string) {
		if path == "" {
			return
		}
		if _, err := readRegular(path); err != nil {
			add(field, fmt.Sprintf("cannot read: %v", err))
		}
	}
	readable("tls.ca_file", t.CAFile)
	readable("tls.cert_file", t.CertFile)
	readable("tls.key_file", t.KeyFile)
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		add("tls.key_file", "must be set with tls.cert_file")
	case t.KeyFile != "" && t.CertFile == "":
		add("tls.cert_file", "must be set with tls.key_file")
	}
	a := s.SASL
	if !a.On() {
		for _, f := range []struct{ name, v string }{
			{"sasl.username", a.Username}, {"sasl.password", a.Password},
			{"sasl.password_file", a.PasswordFile}, {"sasl.password_env", a.PasswordEnv},
		} {
			if f.v != "" {
				add(f.name, "is set but sasl.mechanism is empty (want one of "+strings.Join(SASLMechanisms, ", ")+")")
				break
			}
		}
		return ps
	}
	known := false
	for _, m := range SASLMechanisms {
		known = known || a.MechanismName() == m
	}
	if !known {
		add("sasl.mechanism", fmt.Sprintf("must be one of %s, got %q", strings.Join(SASLMechanisms, ", "), a.Mechanism))
	}
	if a.Username == "" {
		add("sasl.username", "must be set with sasl.mechanism")
	}
	n := 0
	for _, v := range []string{a.Password, a.PasswordFile, a.PasswordEnv} {
		if v != "" {
			n++
		}
	}
	switch {
	case n == 0:
		add("sasl.password", "must be set with sasl.mechanism (or sasl.password_file, or sasl.password_env)")
	case n > 1:
		add("sasl.password", "set one of sasl.password, sasl.password_file and sasl.password_env")
	default:
		if _, p := a.ResolvePassword(); p != nil {
			add("sasl."+p.Field, p.Reason)
		}
	}
	return ps
}

// maxSecurityFile bounds the certificate, key and password files read.
const maxSecurityFile = 1 << 20

// readRegular reads a regular file of at most maxSecurityFile bytes: not
// a directory, device or pipe, which could block or never end.
func readRegular(path string) ([]byte, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case st.Size() > maxSecurityFile:
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecurityFile)
	}
	return os.ReadFile(path)
}
