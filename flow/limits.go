package flow

import (
	"fmt"
	"math"
	"time"
)

// Limits of a budget's definition. They are checked here, for every way a
// budget arrives (the config file through NewTree, a control record
// through Tree.Apply, a definition on the stats topic through CheckBudget),
// so that every number computed from a budget stays finite: a deviation
// (achieved-ideal)/target of at most 2^53/MinTarget, a sum of targets far
// below the largest float64.
const (
	// MinTarget is the smallest target: below it a deviation divides by
	// almost nothing (5e-324 makes it infinite).
	MinTarget = 1e-6
	// MaxTarget is the largest target: 10^15 passes (or rewards), 31
	// years at a million a second; above it the ideal course and its
	// chart axes overflow to infinity (1.7e308 does).
	MaxTarget = 1e15
	// MaxDepth is the longest chain of nested budgets, a budget without
	// a parent counting 1: the lanes of one event are opened along it,
	// and every pass is checked against each budget of it.
	MaxDepth = 16
	// DefaultMaxReward is the largest value one reward event may carry
	// unless configured otherwise (config rewards.max_value, up to
	// MaxTarget): a click counts 1, a purchase its price. Above it the
	// event is dead-lettered (reward_out_of_range) rather than spend a
	// reward budget at once.
	DefaultMaxReward = 1e6
)

// MinTime and MaxTime bound a budget's begin and end: flow computes in
// int64 nanoseconds since 1970, which end in April 2262, and a window
// longer than time.Duration's 292 years would overflow it.
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// CheckTime returns why t (set) is not a valid begin or end, "" when it is
// one.
func CheckTime(t time.Time) string {
	if t.Before(MinTime) || t.After(MaxTime) {
		return fmt.Sprintf("must be between %s and %s, got %s", MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	return ""
}

// CheckTarget returns why t is not a valid target, "" when it is one.
func CheckTarget(t float64) string {
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		return fmt.Sprintf("must be a finite number, got %v", t)
	case t <= 0:
		return fmt.Sprintf("must be positive, got %v", t)
	case t < MinTarget || t > MaxTarget:
		return fmt.Sprintf("must be between %g and %g, got %v", MinTarget, MaxTarget, t)
	}
	return ""
}

// CheckBudget checks one budget's own fields (name, target, window or
// period, reserve, prior, delay rules), not those that need the other
// budgets (parents, depth): the rules NewTree and Tree.Apply apply to
// each budget. The error wraps ErrInvalidBudget.
func CheckBudget(b Budget) error { return validateBudget(b) }

// depthError is the error of a budget nested deeper than MaxDepth.
func depthError(name string, depth int) error {
	return &BudgetError{Budget: name, Field: "parent", Reason: fmt.Sprintf("nests %d budgets deep (itself included), more than %d", depth, MaxDepth)}
}
