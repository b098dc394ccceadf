// Package integration holds throttler's end-to-end tests across processes:
// a broker, load generators and several `throttler run` workers, started
// from the binary this package builds, with signals sent to them mid-run.
//
// Each test runs on one or more kinds of broker (brokers_test.go): kfake
// (`throttler broker`, the embedded broker) and Apache Kafka 4, a JVM
// started from Maven Central's jars (internal/testsupport/kafkabroker;
// `integration/kafka/fetch` puts them in a cache directory, and without
// Java or the jars the Kafka runs skip). No Docker is needed.
package integration
