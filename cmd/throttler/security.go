package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/kafkacheck"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/tools/broker"
)

// kafkaFlags are the connection flags of a command that reaches Kafka
// without a config file: --brokers and the TLS and SASL flags, the
// counterpart of a config's brokers and security sections.
type kafkaFlags struct {
	brokers *[]string
	sec     config.Security
	warned  bool // the secret files' warnings were printed
}

// securityFlagOf maps a field of config.Security (as its problems name
// it) to its flag.
var securityFlagOf = map[string]string{
	"tls.ca_file":              "tls-ca",
	"tls.cert_file":            "tls-cert",
	"tls.key_file":             "tls-key",
	"tls.server_name":          "tls-server-name",
	"tls.insecure_skip_verify": "tls-insecure-skip-verify",
	"sasl.mechanism":           "sasl-mechanism",
	"sasl.username":            "sasl-user",
	"sasl.password":            "sasl-password",
	"sasl.password_file":       "sasl-password-file",
	"sasl.password_env":        "sasl-password-env",
}

// addKafkaFlags registers --brokers (default brokers) and the security
// flags on fs.
func addKafkaFlags(fs *flag.FlagSet, brokers ...string) *kafkaFlags {
	k := &kafkaFlags{brokers: listFlag(fs, "brokers", brokers, "comma-separated seed `brokers` (default "+strings.Join(brokers, ",")+")")}
	addSecurityFlags(fs, &k.sec)
	return k
}

// addSecurityFlags registers the TLS and SASL client flags on fs, filling
// sec.
func addSecurityFlags(fs *flag.FlagSet, sec *config.Security) {
	t, s := &sec.TLS, &sec.SASL
	fs.BoolVar(&t.Enabled, "tls", false, "connect to the brokers with TLS (implied by the other -tls-* flags)")
	fs.StringVar(&t.CAFile, "tls-ca", "", "PEM `file` of the authorities that sign the brokers' certificates (default: the system's)")
	fs.StringVar(&t.CertFile, "tls-cert", "", "PEM client certificate `file`, for brokers that require one (with --tls-key)")
	fs.StringVar(&t.KeyFile, "tls-key", "", "PEM client key `file` (with --tls-cert)")
	fs.StringVar(&t.ServerName, "tls-server-name", "", "`name` the brokers' certificates must carry (default: the dialled host)")
	fs.BoolVar(&t.InsecureSkipVerify, "tls-insecure-skip-verify", false, "accept any broker certificate (tests only)")
	fs.StringVar(&s.Mechanism, "sasl-mechanism", "", "SASL `mechanism`: "+strings.Join(config.SASLMechanisms, ", ")+" (default: no SASL)")
	fs.StringVar(&s.Username, "sasl-user", "", "SASL user `name`")
	fs.StringVar(&s.Password, "sasl-password", "", "SASL `password` (visible to other users of the host: prefer --sasl-password-file or --sasl-password-env)")
	fs.StringVar(&s.PasswordFile, "sasl-password-file", "", "`file` holding the SASL password")
	fs.StringVar(&s.PasswordEnv, "sasl-password-env", "", "environment `variable` holding the SASL password")
}

// checkSecurity returns the first problem of sec as a usage error naming
// its flag.
func checkSecurity(sec config.Security) error {
	if ps := sec.Check(); len(ps) > 0 {
		return securityFlagError(&ps[0])
	}
	return nil
}

func securityFlagError(p *config.FieldProblem) error {
	name, ok := securityFlagOf[p.Field]
	if !ok {
		name = p.Field
	}
	// Say flags, not fields, in the reason too; longest names first, as
	// sasl.password is a prefix of sasl.password_file.
	fields := slices.Collect(maps.Keys(securityFlagOf))
	slices.SortFunc(fields, func(a, b string) int { return len(b) - len(a) })
	reason := p.Reason
	for _, f := range fields {
		reason = strings.ReplaceAll(reason, f, "--"+securityFlagOf[f])
	}
	return badFlag(name, "%s", reason)
}

// opts checks the flags and returns the client options (a usage error
// naming the flag when they are wrong).
func (k *kafkaFlags) opts() ([]kgo.Opt, error) {
	if len(*k.brokers) == 0 {
		return nil, badFlag("brokers", "must list at least one broker")
	}
	if err := checkSecurity(k.sec); err != nil {
		return nil, err
	}
	if !k.warned {
		k.warned = true
		for _, path := range []string{k.sec.TLS.KeyFile, k.sec.SASL.PasswordFile} {
			if w := config.SecretFileWarning(path); w != "" {
				fmt.Fprintln(os.Stderr, "throttler: warning:", w)
			}
		}
	}
	opts, err := kafkaconn.Opts(*k.brokers, k.sec)
	if p, ok := err.(*config.FieldProblem); ok {
		return nil, securityFlagError(p)
	}
	return opts, err
}

// checkFatal reaches the brokers once and returns the failures that
// retrying cannot cure (rejected credentials, TLS mismatch); other
// failures are left to the command's own retries.
func checkFatal(ctx context.Context, opts []kgo.Opt) error {
	if err := kafkacheck.Check(ctx, opts, 10*time.Second); kafkacheck.Fatal(err) {
		return err
	}
	return nil
}

// saslUsersFlag is the repeatable --sasl-user flag of `throttler broker`:
// MECHANISM:USER:PASSWORD. Its value holds a password, so that neither
// Set's error nor the flag package (which quotes the value of a flag
// whose Set fails) may echo it: Set keeps the problem, and the command
// reports it (err) without the value.
type saslUsersFlag struct {
	users []broker.SASLUser
	err   error // the first value that did not parse
}

func (f *saslUsersFlag) String() string { return "" }

func (f *saslUsersFlag) Set(s string) error {
	parts := strings.SplitN(s, ":", 3)
	bad := func(reason string) error {
		if f.err == nil {
			f.err = badFlag("sasl-user", "value %d: %s (the value is not shown: it holds a password)", len(f.users)+1, reason)
		}
		return nil
	}
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return bad("want MECHANISM:USER:PASSWORD")
	}
	mech := strings.ToUpper(parts[0])
	if !slices.Contains(config.SASLMechanisms, mech) {
		return bad("the mechanism must be one of " + strings.Join(config.SASLMechanisms, ", "))
	}
	f.users = append(f.users, broker.SASLUser{Mechanism: mech, User: parts[1], Password: parts[2]})
	return nil
}
