// Package stats is the counter exchange of throttler over Kafka: the
// compacted stats topic through which workers share the cumulative counters
// of the partitions they own, the checkpoint topic from which a worker that
// takes over a partition continues its counters, and the creation of both.
//
// # Stats topic
//
// Every sync interval each worker publishes, per budget x source (source =
// input partition, "events/3"), the source's cumulative flow.Report
// (Publisher, or Exchange.Publish): one record per budget x source, keyed so
// that compaction keeps the newest. Every worker follows the whole topic with
// a View, which keeps the newest report of every key in memory; a starting
// worker reads the compacted topic from its start and, once CaughtUp, has
// the cluster's totals. Exchange joins the two into a flow.Exchange.
//
// Besides reports (record kind 1) the topic carries, so that `throttler
// status` needs nothing else: budget definitions (kind 2, BudgetDef),
// per-source cumulative variant counts of each experiment (kind 3,
// VariantCounts) and experiment definitions (kind 4, ExperimentDef); see
// kinds.go. A View keeps them too (BudgetDefs, ExperimentDefs,
// VariantTotals); a reader that knows only kind 1 skips them as an unknown
// version.
//
// # Checkpoint topic
//
// The consumer writes, in the transaction that commits its outputs and
// input offsets, one record per input partition to the checkpoint topic
// (CheckpointRecord): key "topic/partition", value the input offset and the
// report of every budget, stored in the checkpoint partition with the same
// number as the input partition (produce with Partitioner). The checkpoint
// topic has at least as many partitions as the largest input topic
// (CheckpointTopic). LoadCheckpoint reads it back with read_committed, so
// an aborted transaction's checkpoint is never seen.
//
// # Encodings
//
// Keys and values are versioned binary encodings described in encoding.go
// and checkpoint.go; decoders reject unknown major versions with
// ErrUnknownVersion and skip trailing fields of newer minor versions.
//
// # Errors and metrics
//
// The package does not log. It returns errors (sentinels for errors.Is,
// struct errors carrying context) and exposes counters (View.Stats,
// View.Age, Exchange.Produced/Failed) for the caller's metrics.
package stats
