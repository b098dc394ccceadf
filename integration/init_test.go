package integration

import (
	"testing"

	"github.com/throttler/throttler/internal/schemaregistry"

	. "github.com/throttler/throttler/integration/suite"
)

// TestInitProposesAndRuns: `throttler init` on a topic of the load
// generator's events, in each format (the demo's input topic in JSON, an
// Avro and a Protobuf topic framed for the registry the demo runs in its
// process), writes nothing to Kafka and joins no group, proposes the five
// paths of the events, and writes a config that validate accepts and
// that a worker runs and delivers with.
func TestInitProposesAndRuns(t *testing.T) {
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ format, topic string }{
		{"json", "demo.events"}, {"avro", "events.avro"}, {"protobuf", "events.protobuf"},
	} {
		t.Run(tc.format, func(t *testing.T) { InitAndRun(t, srv.URL(), tc.format, tc.topic) })
	}
}
