package app_test

import (
	"context"
	"os"
	"os/signal"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
)

// A Go program that runs what `throttler run --config throttler.yaml`
// runs, with its own logger, until SIGINT.
func ExampleNewWorker() {
	cfg, err := config.Load("throttler.yaml") // parsed, defaulted and validated
	if err != nil {
		panic(err) // config.Problems lists every problem with its line
	}
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	w, _, err := app.NewWorker(cfg, consumer.WithLogger(log))
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil { // nil after a clean shutdown
		log.Error().Err(err).Msg("worker stopped")
	}
}
