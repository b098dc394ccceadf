// Package crash holds the end-to-end tests of what a fleet keeps through
// failures: workers SIGKILLed at seeded moments (exactly-once: nothing
// lost, nothing duplicated, every pass counted once; at least once: no
// loss, duplicates bounded), nested budgets under kills, broker restarts,
// a worker replaced and fenced, a transaction aborted on its timeout, and
// a stats topic compacted and rebuilt. The harness is package
// integration/suite.
package crash
