package flow

import "time"

// Snapshot holds a controller's quantities as of its last tune, for metrics
// and status pages. Cluster figures are estimates: reported counters
// extrapolated to the snapshot's instant.
type Snapshot struct {
	Budget string
	At     time.Time
	Period int64   // current period (0 for window budgets)
	Target float64 // per period for period budgets
	Ideal  float64 // ideal achieved amount now

	ClusterOffered float64 // events offered in the period, cluster-wide
	ClusterPassed  float64
	ClusterRewards float64
	// Achieved is passes, or for reward budgets rewards plus the rewards
	// still expected from recent passes.
	Achieved float64

	ClusterRate     float64 // offered events per second, cluster-wide
	LocalRate       float64 // offered events per second on this node
	LocalProportion float64 // decayed share of the cluster's traffic seen here

	Conversion  float64       // rewards per pass (1 for pass budgets)
	RewardDelay time.Duration // estimated delay from pass to reward

	IdealPassRate   float64 // fraction of events to pass on an ideal course
	WorkingPassRate float64 // fraction passed now, lag/excess corrected
	Cut             float64 // score cut of scored budgets (+Inf: none pass)

	Lag       float64       // ideal − achieved: positive when behind
	LagTime   time.Duration // Lag in time at the ideal rate
	Exhausted bool
}
