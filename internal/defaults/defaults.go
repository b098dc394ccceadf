// Package defaults holds the values a worker runs with when nothing sets
// them, shared by the two ways to set them: package consumer's options
// (consumer.DefaultGroup, …) and the config file's fields
// (config.DefaultGroup, …), which export them under their own names so
// that a field left out of the file runs as an option left out of
// consumer.NewWorker. It holds values only; each is documented where it
// is exported.
package defaults

import "time"

// The worker's defaults.
const (
	Group          = "throttler"
	CommitInterval = 100 * time.Millisecond
	SyncInterval   = time.Second
	BudgetSeries   = 1000
)
