// Package fencing holds the end-to-end tests of a worker the broker fences
// off: a worker replaced while it still runs (its successor's producer
// fences the old one), and a worker frozen past its transaction timeout,
// whose transaction the broker aborts. The harness is package
// integration/suite.
package fencing
