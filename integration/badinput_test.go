package integration

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/testsupport/testcert"
	"github.com/throttler/throttler/internal/tools/broker"

	. "github.com/throttler/throttler/integration/suite"
)

// TestBadInput runs the shared suite on kfake and on Apache Kafka: every
// kind of bad record ends in the dead-letter topic with its reason, and
// the good events around them are decided as usual, counts exact.
func TestBadInput(t *testing.T) {
	OnBrokers(t, BothBrokers, func(t *testing.T, k BrokerKind) {
		b := SharedCluster(t, k, 3)
		RunBadInputSuite(t, []string{b.Addr}, config.Security{}, k.GroupYAML(GroupTimeouts{}), b.Prefix)
	})
}

// TestBadInputContainer runs the suite on Kafka in a container
// (testcontainers-go), where a Docker engine answers; it skips without.
func TestBadInputContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a Kafka container")
	}
	b := SharedCluster(t, ContainerKind, 3)
	RunBadInputSuite(t, []string{b.Addr}, config.Security{}, ContainerKind.GroupYAML(GroupTimeouts{}), b.Prefix)
}

// TestBadInputKfakeSASLTLS runs the shared suite on an embedded broker
// that requires TLS and SCRAM-SHA-512: every client of the worker (group
// session, transactions, stats view, checkpoints, topic creation) goes
// through the config's security section.
func TestBadInputKfakeSASLTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), SuiteTimeout)
	defer cancel()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Logger(zerolog.Nop()),
		broker.TLS(files.Cert, files.Key),
		broker.Users(broker.SASLUser{Mechanism: config.SASLScramSHA512, User: "worker", Password: "w-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	RunBadInputSuite(t, b.Addrs(), config.Security{
		TLS:  config.TLS{CAFile: files.CA},
		SASL: config.SASL{Mechanism: config.SASLScramSHA512, Username: "worker", Password: "w-secret"},
	}, "", "")
}
