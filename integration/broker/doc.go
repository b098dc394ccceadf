// Package broker holds the end-to-end tests of what the broker does to a
// running fleet: broker restarts (SIGTERM, and SIGKILLs on request) under
// exactly-once, a worker replaced and fenced, a transaction aborted by
// the broker's timeout, and a stats topic compacted by Kafka's log
// cleaner, then rebuilt by a worker started from it. The harness is
// package integration/suite.
package broker
