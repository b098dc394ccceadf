// Package kafkacheck reaches the brokers once and turns the failures that
// retrying cannot cure (rejected credentials, a certificate that does not
// verify, TLS on one side only) into errors that say so, instead of the
// bare EOF a client sees when a broker closes the connection on bad
// credentials. It knows nothing of the config file: package kafkaconn
// makes the connection options, and every client checks with Check.
package kafkacheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// AuthError is a broker refusing the SASL credentials: a wrong user or
// password, or a mechanism the broker does not enable for the user.
// Retrying cannot help.
type AuthError struct {
	Mechanism string // "" when the client has no SASL
	User      string
	Err       error // what the client saw (often a bare EOF)
}

func (e *AuthError) Error() string {
	if e.Mechanism == "" {
		return fmt.Sprintf("the broker requires SASL authentication and none is configured (set security.sasl or the -sasl-* flags): %v", e.Err)
	}
	return fmt.Sprintf("SASL authentication failed for user %q with mechanism %s: the broker refused the credentials (wrong user name or password, or the mechanism is not enabled for this user): %v",
		e.User, e.Mechanism, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// TLSError is a TLS failure that retrying cannot cure: a broker
// certificate that does not verify, or TLS on one side only.
type TLSError struct {
	Err error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("TLS to the brokers failed (check security.tls or the -tls-* flags against the broker's listener): %v", e.Err)
}

func (e *TLSError) Unwrap() error { return e.Err }

// Fatal reports whether err is an AuthError or a TLSError: a
// misconfiguration to report and stop on, not to retry.
func Fatal(err error) bool {
	var a *AuthError
	var t *TLSError
	return errors.As(err, &a) || errors.As(err, &t)
}

// Check asks the brokers for their metadata once, with opts (as built by
// Opts), within timeout, and returns nil when one answers. A failure that
// retrying cannot cure is returned as an *AuthError or a *TLSError; any
// other failure (no broker listening, a timeout) as it is, for the caller
// to retry.
func Check(ctx context.Context, opts []kgo.Opt, timeout time.Duration) error {
	h := new(saslHook)
	cl, err := kgo.NewClient(append(slices.Clip(opts), kgo.WithHooks(h), kgo.DialTimeout(timeout))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := probeTLS(ctx, cl); err != nil {
		return err
	}
	err = cl.Ping(ctx)
	if err == nil {
		return nil
	}
	return Classify(err, cl, h.failed.Load())
}

// Classify wraps err as an *AuthError or a *TLSError when it is one (see
// Check); saslFailed says whether a SASL exchange of cl's was cut off.
func Classify(err error, cl *kgo.Client, saslFailed bool) error {
	mech, user := "", ""
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) > 0 {
		mech = ms[0].Name()
		if um, ok := ms[0].(interface{ User() string }); ok {
			user = um.User()
		}
	}
	var first *kgo.ErrFirstReadEOF
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case saslFailed,
		errors.Is(err, kerr.SaslAuthenticationFailed),
		errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState):
		return &AuthError{Mechanism: mech, User: user, Err: err}
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &header), errors.As(err, &alert):
		return &TLSError{Err: err}
	case errors.As(err, &first):
		// kgo's guess: TLS on one side only, or SASL missing.
		tlsOn, _ := cl.OptValue(kgo.DialTLS).(bool)
		switch {
		case mech == "" && strings.Contains(err.Error(), "SASL"):
			return &AuthError{Err: err}
		case mech == "" && !tlsOn:
			// Either could be missing; say both.
			return &TLSError{Err: fmt.Errorf("%w (or the broker requires SASL: set security.sasl or the -sasl-* flags)", err)}
		}
		return &TLSError{Err: err}
	}
	return err
}

// saslHook notes a SASL exchange the broker cut off: kfake (and some
// proxies) close the connection on bad credentials instead of answering
// with SASL_AUTHENTICATION_FAILED, which the client sees as a bare EOF.
type saslHook struct{ failed atomic.Bool }

// SASL request keys.
const (
	keySASLHandshake    = 17
	keySASLAuthenticate = 36
)

func (h *saslHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil && (key == keySASLHandshake || key == keySASLAuthenticate) {
		h.failed.Store(true)
	}
}

// handshakeTimeout bounds probeTLS's handshake. A plaintext listener
// does not answer a TLS client hello; it waits for more bytes.
const handshakeTimeout = 5 * time.Second

// probeTLS does a TLS handshake with the first seed broker that accepts a
// TCP connection, when cl uses TLS, and returns a *TLSError when the
// handshake fails or gets no answer; nil when it succeeds or no seed
// accepts a connection (Ping then says why).
func probeTLS(ctx context.Context, cl *kgo.Client) error {
	tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	if tc == nil {
		return nil
	}
	for _, addr := range seeds {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(addr, "9092")
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		c := tc.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err = tls.Client(conn, c).HandshakeContext(hctx)
		cancel()
		conn.Close()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return &TLSError{Err: fmt.Errorf("%s accepted a connection but did not answer the TLS handshake within %v: is its listener plaintext? (%w)", addr, handshakeTimeout, err)}
		}
		return &TLSError{Err: fmt.Errorf("handshake with %s: %w", addr, err)}
	}
	return nil
}
