package flow

import (
	"errors"
	"fmt"
	"time"
)

// MaxNameBytes is the longest budget name, in bytes. Names travel in
// every stats and ledger record that counts the budget, and a ledger
// record holds at most 64 KiB: the bound keeps any one budget's entry a
// small part of a record.
const MaxNameBytes = 1024

// Budget describes what one controller paces.
//
// A budget is either a window budget (Begin and End set: spend Target
// smoothly between them, finishing Reserve before End) or a period budget
// (Period set: at most Target per period, periods aligned to Begin, or to
// the Unix epoch when Begin is zero).
type Budget struct {
	Name    string
	Target  float64 // passes, or rewards when Rewards is set
	Begin   time.Time
	End     time.Time
	Reserve time.Duration // finish this long before End
	Period  time.Duration // period budgets: Target per Period

	// Rewards makes Target count rewards (clicks, conversions) reported
	// through Lane.Reward instead of passes.
	Rewards bool
	// Conversion and RewardDelay, for a reward budget, are what is known
	// in advance of its rewards: about how many rewards a pass brings, and
	// how long after it. Both are optional (0: unknown). They pace the
	// start, before rewards tell; the conversion ratio and delay fitted on
	// the rewards seen take over as they come (the prior weighs as much as
	// 20 rewards). Without them a node starts from what its peers have
	// fitted, and without that from an uninformed ratio: the middle, on a
	// log scale, of the ratios at which the target can be met at all.
	Conversion  float64
	RewardDelay time.Duration
	// Scored turns on score-tiered selection: the highest scores pass first.
	Scored bool
	// Parent names the budget above this one: a pass must fit both.
	Parent string
	// Delay makes a period budget hold events back instead of rejecting
	// them: once this node's share of Target for the current period is
	// spent, Lane.Decide answers ReasonDelayed and Lane.RetryAt tells when
	// the next period refills it (see delay.go). A delay budget needs a
	// Period, counts passes, is not scored and is not nested.
	Delay bool
}

// ErrInvalidBudget is wrapped by every error about a budget's definition.
var ErrInvalidBudget = errors.New("invalid budget")

// BudgetError names the budget and field that are wrong.
type BudgetError struct {
	Budget string
	Field  string
	Reason string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("budget %q: %s: %s", e.Budget, e.Field, e.Reason)
}

func (e *BudgetError) Unwrap() error { return ErrInvalidBudget }

// sameBudget reports whether a and b define the same budget: every field
// equal, instants compared as instants whatever their locations.
func sameBudget(a, b Budget) bool {
	return instant(a) == instant(b)
}

// instant returns b with Begin and End in UTC without a monotonic reading.
func instant(b Budget) Budget {
	if !b.Begin.IsZero() {
		b.Begin = time.Unix(0, b.Begin.UnixNano()).UTC()
	}
	if !b.End.IsZero() {
		b.End = time.Unix(0, b.End.UnixNano()).UTC()
	}
	return b
}
