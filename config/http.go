package config

import (
	"fmt"
	"os"
	"strings"
)

// HTTPTLS makes the worker's HTTP server speak TLS only: its PEM
// certificate and key. Both or neither.
type HTTPTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// HTTPAuth makes the worker's /metrics require credentials (the health
// probes /livez and /readyz stay open): HTTP basic with User and a
// password, or a bearer token, or either when both are set. Secrets come
// from a file or an environment variable, never from the config file
// itself (config files get copied and printed).
type HTTPAuth struct {
	User         string `yaml:"user"`
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
	TokenFile    string `yaml:"token_file"`
	TokenEnv     string `yaml:"token_env"`
}

// On reports whether authentication is configured.
func (a HTTPAuth) On() bool {
	return a.User != "" || a.PasswordFile != "" || a.PasswordEnv != "" || a.TokenFile != "" || a.TokenEnv != ""
}

// Resolve returns the password and the token from their files or
// variables ("" when not set). The problem names the field at fault,
// relative to the auth section.
func (a HTTPAuth) Resolve() (password, token string, p *FieldProblem) {
	secret := func(field, file, env string) string {
		switch {
		case p != nil:
		case file != "":
			b, err := readRegular(file)
			if err != nil {
				p = &FieldProblem{field + "_file", fmt.Sprintf("cannot read: %v", err)}
			}
			return strings.TrimRight(string(b), "\r\n")
		case env != "":
			v, ok := os.LookupEnv(env)
			if !ok || v == "" {
				p = &FieldProblem{field + "_env", fmt.Sprintf("environment variable %s is not set", env)}
			}
			return v
		}
		return ""
	}
	password = secret("password", a.PasswordFile, a.PasswordEnv)
	token = secret("token", a.TokenFile, a.TokenEnv)
	return password, token, p
}

// httpSection checks the http section: listen, TLS files both or neither
// and readable, authentication complete.
func (v *checker) httpSection(h HTTP) {
	v.hostPort("http.listen", h.Listen, true)
	if h.BudgetSeries < 0 {
		v.add("http.budget_series", fmt.Sprintf("must be at least 1 (0 or absent: %d), got %d", DefaultBudgetSeries, h.BudgetSeries))
	}
	for i, host := range h.AllowedHosts {
		if host == "" || strings.ContainsAny(host, ":/ ") {
			v.add(fmt.Sprintf("http.allowed_hosts[%d]", i), fmt.Sprintf("must be a host name without port, got %q", host))
		}
	}
	t := h.TLS
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		v.add("http.tls", "set both cert_file and key_file, or neither")
	case t.CertFile != "":
		for field, path := range map[string]string{"http.tls.cert_file": t.CertFile, "http.tls.key_file": t.KeyFile} {
			if _, err := readRegular(path); err != nil {
				v.add(field, fmt.Sprintf("cannot read: %v", err))
			}
		}
	}
	a := h.Auth
	if !a.On() {
		return
	}
	password, token, p := a.Resolve()
	switch {
	case a.PasswordFile != "" && a.PasswordEnv != "":
		v.add("http.auth.password_file", "set password_file or password_env, not both")
	case a.TokenFile != "" && a.TokenEnv != "":
		v.add("http.auth.token_file", "set token_file or token_env, not both")
	case p != nil:
		v.add("http.auth."+p.Field, p.Reason)
	case (a.User == "") != (password == ""):
		v.add("http.auth.user", "a user needs a password (password_file or password_env), and a password a user")
	case a.User == "" && token == "":
		v.add("http.auth", "set a user and a password, or a token (token_file or token_env)")
	}
}

// SecretFileWarning returns a warning when the file at path (a key, a
// password or a token) can be read by its group or by others, "" when it
// cannot or when path is empty or missing.
func SecretFileWarning(path string) string {
	if path == "" {
		return ""
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("secret file %s is readable by its group or others (mode %04o): chmod 600 it", path, st.Mode().Perm())
}

// SecretWarnings returns a warning for every secret file of c (the
// brokers' client key and SASL password, the HTTP server's key, password
// and token) that its group or others can read.
func (c *Config) SecretWarnings() []string {
	var out []string
	for _, path := range []string{c.Security.TLS.KeyFile, c.Security.SASL.PasswordFile, c.HTTP.TLS.KeyFile, c.HTTP.Auth.PasswordFile, c.HTTP.Auth.TokenFile} {
		if w := SecretFileWarning(path); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// CheckHTTP returns the first problem of an http section checked on its
// own (as Validate checks a config's), nil when there is none: for
// commands that take the section as flags.
func CheckHTTP(h HTTP) *Problem {
	v := &checker{}
	v.httpSection(h)
	if len(v.problems) == 0 {
		return nil
	}
	return &v.problems[0]
}
