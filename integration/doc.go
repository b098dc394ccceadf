// Package integration holds throttler's end-to-end tests across processes:
// a broker, load generators and several `throttler run` workers, started
// from the binary the tests build, with signals sent to them mid-run. The
// tests are in five packages, so that each runs within go test's default
// time limit: this one (bad input, formats, caps, experiments, hostile
// input, the CLI), crash (worker kills), broker (broker restarts,
// fencing, timeouts, compaction), pacing (paced windows, a faulty stats
// exchange) and delay (delay budgets); the harness they share is package
// suite.
//
// Each test runs on one or more kinds of broker (suite/brokers.go): kfake
// (`throttler broker`, the embedded broker) and Apache Kafka 4, a JVM
// started from Maven Central's jars (internal/testsupport/kafkabroker;
// `integration/kafka/fetch` puts them in a cache directory, and without
// Java or the jars the Kafka runs skip). No Docker is needed.
package integration
