package integration

import (
	"context"
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// TestFormatsKfake runs the same end-to-end checks on JSON, Avro and
// Protobuf input topics (one worker, exactly-once, an embedded broker and
// an in-process schema registry): every bad record in the dead-letter
// topic with its reason, every good event exactly once in the output or
// rejected topic with its bytes unchanged, the checkpoints counting what
// the output holds. (Budgets within 1%: TestPacedFormats.) It runs on
// kfake and on Apache Kafka.
func TestFormats(t *testing.T) {
	OnBrokers(t, BothBrokers, func(t *testing.T, k BrokerKind) {
		ctx, cancel := context.WithTimeout(context.Background(), SuiteTimeout)
		defer cancel()
		b, srv := SharedCluster(t, k, 3), StartRegistry(t)
		formats, avroID, protoID := NewSuiteFormats(t, srv)
		for _, f := range formats {
			t.Run(f.Name, func(t *testing.T) {
				RunFormatSuite(ctx, t, k, b.Prefix, []string{b.Addr}, srv.URL(), f, FormatBadKinds(f, avroID, protoID))
			})
		}
	})
}
