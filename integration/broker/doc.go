// Package broker holds the end-to-end tests of what the broker does to a
// running fleet: broker restarts (SIGTERM, and SIGKILLs on request) under
// exactly-once, and a stats topic compacted by Kafka's log cleaner, then
// rebuilt by a worker started from it (a worker fenced or aborted by the
// broker: package integration/fencing). The harness is package
// integration/suite.
package broker
