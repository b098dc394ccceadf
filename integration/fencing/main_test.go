package fencing

import (
	"testing"

	"github.com/throttler/throttler/integration/suite"
)

// TestMain builds the throttler binary the tests start, and stops the
// brokers the tests shared once they are done.
func TestMain(m *testing.M) { suite.Main(m) }
