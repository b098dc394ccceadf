// Package integration holds throttler's end-to-end tests across processes:
// an embedded broker process, load generators and several `throttler run`
// workers, started from the binary this package builds, with signals sent
// to them mid-run. The tests in this package need no Docker: the broker is
// kfake. (The same assertions against real Kafka images, through
// testcontainers-go, skip when no Docker engine is reachable.)
package integration
