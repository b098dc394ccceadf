package formats

import (
	"testing"

	"github.com/throttler/throttler/internal/tools/loadgen"

	. "github.com/throttler/throttler/integration/suite"
)

// TestPacedFormats paces one window budget over JSON, Avro and Protobuf
// events alike (each format on its own broker and worker, in parallel):
// the passes delivered end within 1% of the target, and equal the passes
// the worker counted. It runs on kfake and on Apache Kafka.
func TestPacedFormats(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s window per format")
	}
	OnBrokers(t, BothBrokers, func(t *testing.T, k BrokerKind) {
		for _, format := range []string{loadgen.FormatJSON, loadgen.FormatAvro, loadgen.FormatProtobuf} {
			t.Run(format, func(t *testing.T) {
				t.Parallel()
				RunPacedFormat(t, k, format)
			})
		}
	})
}
