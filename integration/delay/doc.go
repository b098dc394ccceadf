// Package delay holds the end-to-end test of delay budgets: three workers
// hold the events over a period's limit back until the next period
// instead of rejecting them, and every event is delivered. The harness is
// package integration/suite.
package delay
