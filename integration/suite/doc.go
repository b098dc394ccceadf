// Package suite is the harness of throttler's end-to-end tests (packages
// integration, integration/crash, integration/broker, integration/fencing,
// integration/pacing, integration/formats and integration/delay): it builds the throttler binary once per test
// package (Main), starts brokers of every kind (kfake, Apache Kafka with
// either group protocol and transaction version, a container, an external
// cluster) and throttler processes, which die with the test binary,
// injects faults (a TCP fault proxy, SIGKILLs, records written by hand),
// and reads what the topics, the ledgers and the workers' metrics hold. It
// is test support: nothing else imports it.
package suite
