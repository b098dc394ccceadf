package flow

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Counters are the cumulative counts of one source (a Kafka partition, or a
// simulated node) for one budget.
//
// Offered counts events that reached the budget's decision, Passed counts
// events that passed every level of the budget tree, Rewards sums the value
// of the rewards (clicks, conversions) reported for the budget.
type Counters struct {
	Offered uint64
	Passed  uint64
	Rewards float64
}

// Report is what a node publishes about one source of one budget, once per
// sync interval: the source's cumulative counters at a given instant.
//
// Total never resets. Period and InPeriod describe the budget's current
// period: for a window budget the period is the whole window (Period is 0 and
// InPeriod equals the counts inside the window); for a period budget
// ("n per minute") Period is the index of the period the counters in
// InPeriod belong to.
type Report struct {
	Budget string    // budget name
	Source string    // source identity, e.g. "events/3"
	At     time.Time // the instant the counters were read
	Since  time.Time // when counting began for this source

	Total    Counters
	Period   int64
	InPeriod Counters

	// Cut is the score cut the source's node applied at At (scored budgets
	// only). Nodes average their cuts so that the whole cluster cuts at
	// one score, estimated from all of its traffic.
	Cut float64

	// Conversion and RewardDelay are the conversion ratio (rewards per
	// pass) and the reward delay the source's node has fitted (reward
	// budgets only; 0 while unknown): a node that starts takes them up
	// instead of learning them again.
	Conversion  float64
	RewardDelay time.Duration
}

// Exchange is what a controller needs from its peers: the latest report of
// every source of a budget, published by whichever node owns that source.
// flow has no transport of its own; the stats package implements Exchange
// over a compacted Kafka topic, and MemoryExchange implements it in memory.
type Exchange interface {
	// Publish makes reports visible to every node (eventually; an
	// implementation may delay or lose them).
	Publish(reports []Report) error
	// View appends to dst the latest known report of every source of the
	// budget and returns the extended slice.
	View(budget string, dst []Report) []Report
}

// ReportLookup is an Exchange that looks up the latest report of one
// source of a budget; Tree.Lose asks it rather than a whole View.
type ReportLookup interface {
	Report(budget, source string) (Report, bool)
}

// MemoryExchange is an Exchange in memory: every published report is
// visible at once to every reader. Safe for concurrent use.
type MemoryExchange struct {
	mu     sync.Mutex
	latest map[string]map[string]Report // budget → source → report
}

// Publish keeps the newest report of each (budget, source).
func (m *MemoryExchange) Publish(reports []Report) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		m.latest = map[string]map[string]Report{}
	}
	for _, r := range reports {
		bs := m.latest[r.Budget]
		if bs == nil {
			bs = map[string]Report{}
			m.latest[r.Budget] = bs
		}
		if old, ok := bs[r.Source]; !ok || !r.At.Before(old.At) {
			bs[r.Source] = r
		}
	}
	return nil
}

// Report returns the latest report of budget × source, if there is one.
func (m *MemoryExchange) Report(budget, source string) (Report, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.latest[budget][source]
	return r, ok
}

// View appends the latest report of every source of budget.
func (m *MemoryExchange) View(budget string, dst []Report) []Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(dst)
	for _, r := range m.latest[budget] {
		dst = append(dst, r)
	}
	slices.SortFunc(dst[n:], func(a, b Report) int { return strings.Compare(a.Source, b.Source) })
	return dst
}
