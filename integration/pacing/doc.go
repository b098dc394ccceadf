// Package pacing holds the end-to-end tests of pacing across processes:
// window budgets paced by three workers, and the counter exchange through
// a faulty network (delay, loss, a partition of the stats topic); the same
// pacing over JSON, Avro and Protobuf is package integration/formats. The
// harness is package integration/suite.
package pacing
