// Package crash holds the end-to-end tests of what a fleet keeps through
// worker crashes: workers SIGKILLed at seeded moments (exactly-once:
// nothing lost, nothing duplicated, every pass counted once; at least
// once: no loss, duplicates bounded), and a nested budget paced under
// kills. The harness is package integration/suite.
package crash
