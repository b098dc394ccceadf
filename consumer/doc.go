// Package consumer is the throttler worker: one member of a Kafka consumer
// group that reads events, runs each through its partition's pipeline
// (package pipeline) and writes what the pipeline decides to the output,
// variant, rejected and dead-letter topics.
//
// A Worker (NewWorker, then Run once) owns, per assigned partition, a
// goroutine, a pipeline chain and the partition's lanes of the flow tree
// (package flow), and commits the partition's progress together with its
// counters: exactly once (the default), the outputs, the input offsets and
// the partition's ledger on the stats topic (package stats) are one Kafka
// transaction; at least once, the outputs are flushed first, then the
// ledger and the offsets are written. A partition taken over restores its
// counters from its ledger, so that no budget counts a pass twice or
// forgets one across a rebalance or a crash.
//
// Between batches the worker tunes the flow tree, publishes its
// partitions' counters and reads its peers' through the stats topic every
// sync interval, holds the events of delay budgets until their next
// period, counts experiment assignments, and serves metrics and health
// probes (HTTPListen). Budgets change while it runs through the tree
// (OnStart hooks such as the control topic's follower apply them).
//
// The package does not read configuration files (package app builds a
// Worker from a config.Config) and does not create the input topics.
package consumer
