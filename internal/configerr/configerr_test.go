package configerr_test

import (
	"context"
	"errors"
	"testing"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

// TestOneSentinel: the configuration errors of every package wrap the one
// sentinel, whichever package's name the caller uses for it.
func TestOneSentinel(t *testing.T) {
	_, errDecode := decode.NewDecoder(decode.MaxBytes(0))
	_, errStats := stats.NewView(context.Background(), "", nil)
	_, errSplitter := splitter.New([]splitter.Layer{{}})
	_, errConfig := config.Parse([]byte("brokers: []\n"))
	_, errPipeline := pipeline.Standard(pipeline.Spec{})
	for name, err := range map[string]error{"decode": errDecode, "stats": errStats, "splitter": errSplitter, "config": errConfig, "pipeline": errPipeline} {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		for _, sentinel := range []error{decode.ErrInvalidConfig, stats.ErrInvalidConfig, splitter.ErrInvalidConfig, config.ErrInvalid, consumer.ErrInvalidConfig, pipeline.ErrInvalidConfig} {
			if !errors.Is(err, sentinel) {
				t.Errorf("%s: %v does not wrap %v", name, err, sentinel)
			}
		}
	}
}
