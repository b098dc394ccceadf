// Package pacing holds the end-to-end tests of pacing across processes:
// window budgets paced by three workers, in JSON, Avro and Protobuf, and
// the counter exchange through a faulty network (delay, loss, a partition
// of the stats topic). The harness is package integration/suite.
package pacing
