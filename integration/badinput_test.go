package integration

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/broker"
)

// TestBadInputKfake runs the shared suite on the embedded broker: every
// kind of bad record ends in the dead-letter topic with its reason, and
// the good events around them are decided as usual, counts exact.
func TestBadInputKfake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Logger(zerolog.Nop()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runBadInputSuite(t, b.Addrs(), config.Security{})
}
