// Package integration holds throttler's end-to-end tests across processes:
// a broker, load generators and several `throttler run` workers, started
// from the binary the tests build, with signals sent to them mid-run. The
// tests are in seven packages, so that each runs within go test's default
// time limit: this one (bad input, formats, caps, experiments, hostile
// input, a schema registry's outage, the CLI), crash (worker kills), broker
// (broker restarts, a compacted stats topic), fencing (a replaced worker,
// a transaction aborted on its timeout), formats (paced budgets over Avro,
// Protobuf and JSON inputs), pacing (paced windows, a faulty stats
// exchange) and delay (delay budgets); the harness they share is package
// suite.
//
// Each test runs on one or more kinds of broker (suite/brokers.go): kfake
// (`throttler broker`, the embedded broker) and Apache Kafka 4, a JVM
// started from Maven Central's jars (internal/testsupport/kafkabroker;
// `integration/kafka/fetch` puts them in a cache directory, and without
// Java or the jars the Kafka runs skip). No Docker is needed.
//
// `integration/soak` runs the tests once seen flaky twenty times each
// beside `stress-ng --cpu 2`: a test that fails there is a bug to find.
package integration
