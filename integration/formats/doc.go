// Package formats holds the end-to-end test of one window budget paced
// over JSON, Avro and Protobuf events alike, each format on its own broker
// and worker. The harness is package integration/suite.
package formats
