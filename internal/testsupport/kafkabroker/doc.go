// Package kafkabroker starts Apache Kafka for tests: one KRaft node,
// broker and controller in one JVM process, or a cluster of several such
// nodes (Nodes), on free loopback ports with a data directory of its own, from the jars integration/kafka/fetch puts in
// a cache directory (Maven Central's kafka_2.13 and its dependencies).
//
// Start gives a test a broker that stops when the test ends; New and
// Close do the same for a broker shared by a package's tests (TestMain).
// Where Java or the jars are missing, Start skips the test and names the
// command that fetches them (THROTTLER_REQUIRE_KAFKA=1 makes that a
// failure, for CI). A broker is ready when it answers a metadata request
// naming itself; Stop (SIGTERM), Kill (SIGKILL) and Restart (same ports,
// same data) let a test take it down mid-run, and StopNode, KillNode and
// RestartNode one node of a cluster. The JVM is started with
// PR_SET_PDEATHSIG from a thread that lives as long as the JVM, so it dies
// with the test binary even when that is SIGKILLed.
//
// The configuration is a small cluster for tests: internal topics and
// topics created without a replication factor on min(nodes, 3) replicas
// (10 partitions, not 50, for the internal ones), no initial
// rebalance delay, KIP-848 group timeouts as short as the classic ones the
// tests use (6 s sessions, 500 ms heartbeats), a broker session of 4 s
// (a broker restarted after a SIGKILL registers again once the previous
// registration has expired), a small log cleaner buffer, no topic
// auto-creation (as kfake, and as careful clusters: throttler creates what
// it writes). Options change these and add any server property. The JVM
// gets 512 MiB of heap and the serial collector.
package kafkabroker
