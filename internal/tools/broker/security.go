package broker

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/kafkaconn"
)

// brokerSecurity is what Users and TLS add: kfake's options, and the
// options of the broker's own client.
type brokerSecurity struct {
	kfake  []kfake.Opt
	client []kgo.Opt
}

// security checks the SASL users and loads the TLS key pair. addr is the
// advertised address, which the broker's own client dials.
func (c *cfg) security(addr string) (brokerSecurity, error) {
	var s brokerSecurity
	for i, u := range c.users {
		m := config.SASL{Mechanism: u.Mechanism, Username: u.User, Password: u.Password}
		switch {
		case u.User == "":
			return s, fmt.Errorf("%w: SASL user %d has no name", ErrOptions, i+1)
		case u.Password == "":
			return s, fmt.Errorf("%w: SASL user %q has no password", ErrOptions, u.User)
		}
		mech, err := kafkaconn.Mechanism(m)
		if err != nil {
			return s, fmt.Errorf("%w: SASL user %q: mechanism %q: want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", ErrOptions, u.User, u.Mechanism)
		}
		if i == 0 {
			s.kfake = append(s.kfake, kfake.EnableSASL())
			s.client = append(s.client, kgo.SASL(mech))
		}
		s.kfake = append(s.kfake, kfake.Superuser(m.MechanismName(), u.User, u.Password))
	}
	if c.tlsCert == "" && c.tlsKey == "" {
		return s, nil
	}
	if c.tlsCert == "" || c.tlsKey == "" {
		return s, fmt.Errorf("%w: TLS needs both a certificate and a key file", ErrOptions)
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return s, fmt.Errorf("%w: TLS key pair %s, %s: %v", ErrOptions, c.tlsCert, c.tlsKey, err)
	}
	s.kfake = append(s.kfake, kfake.TLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}))
	// The broker's own client trusts exactly the broker's certificate,
	// whatever names it carries and whoever signed it.
	leaf := cert.Certificate[0]
	s.client = append(s.client, kgo.DialTLSConfig(&tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // verified by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
				return errors.New("broker: the server at " + addr + " is not this broker")
			}
			return nil
		},
	}))
	return s, nil
}
