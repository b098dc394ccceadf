// Package flow holds throttler's algorithms: the decentralized pacing
// controller, its score sketch and reward model, per-key GCRA caps, and
// tower-style window and concurrency limits. It knows nothing of Kafka:
// time is always an argument, and the counters peers exchange pass through
// the Exchange interface.
//
// # Pacing
//
// A Budget is paced by one Controller per node (held in a Tree, which links
// nested budgets). Each source of traffic the node owns (a Kafka partition)
// gets a Lane per budget; Lane.Decide is the hot path: lock-free, no
// allocation, one goroutine per lane. Every tune interval (Tree.Tune) the
// controller re-computes the working pass rate from its lanes' counters; every
// sync interval (Tree.Sync) it also reads its peers' latest reports.
//
// Every quantity of seed 000 (the decentralized cluster limiter) is here,
// under its meaning, and shown in a Snapshot:
//
//   - local traffic proportion: the share of the cluster's offered traffic
//     seen by this node, smoothed with the attenuation coefficient P
//     (Decay): prop = P·prop + (1−P)·local/cluster;
//   - cluster traffic between syncs: estimated from what is known, as in the
//     seed, but per source: each peer source's last report is extrapolated
//     by its own offered rate (from its last two reports) and by this node's
//     exact pass fraction since the report's instant — peers run the same
//     controller. This generalises the seed's LastSynced + LocalSinceSync /
//     proportion (which assumes every report was made at the same instant)
//     to publications that are delayed, lost, or made at different phases;
//   - conversion (reward) ratio: rewards per pass, for reward budgets;
//   - ideal pass rate: the fraction of offered events to pass to follow the
//     ideal curve at the current cluster rate, smoothed with P;
//   - working pass rate with lag/excess acceleration: the seed's
//     IdealPassRate·(1 ± LagTime/AccelerationPeriod), which is the same as
//     passing, over the acceleration horizon h, what the ideal curve gains
//     plus the lag: p = (ideal(t+h) − achieved(t)) / h / clusterRate.
//
// What changed from the seed, and why:
//
//   - Feed-forward from the cluster rate. The working rate is a wanted
//     absolute rate divided by the current cluster offered rate, so a change
//     of traffic (a node lost, a step ×4) changes the pass fraction at the
//     next sync instead of through the slow decay of a ratio.
//   - No cold-start gap. The seed passes nothing until it has synced and its
//     smoothed rates have converged (~13 s in its own measurements). Here a
//     node measures its own rate within one tune interval (100 ms) and,
//     until peers are heard, assumes the sources it has not heard from carry
//     the average of those it has, counting itself as its share of the
//     cluster (Tree.SetShare: assigned partitions over all partitions). The
//     same fallback keeps a node pacing on local estimates when the exchange
//     is down.
//   - Deterministic splitting. An unscored lane passes by error diffusion
//     (a credit that grows by p per event, one pass per whole credit) rather
//     than a random draw, so a lane passes exactly its fraction.
//   - Ends and periods. The horizon shrinks near the end of the window so
//     the target is met, not overshot; once the cluster estimate reaches the
//     target every event is rejected as exhausted. Period budgets (n per
//     minute) re-target at each period and lanes roll their counters at the
//     boundary without waiting for the controller.
//   - Reward budgets. The seed's smoothed Reward/Passed is biased while
//     rewards are in flight; here the conversion ratio and the reward delay
//     are fitted together (least squares on increments of R(t) ≈ c·P(t−d)),
//     achieved counts rewards plus c × passes still in flight, passes lead
//     the reward curve by the delay, stop two standard deviations of the
//     in-flight noise short and top up from the rewards actually seen, and
//     stop when a reward could no longer arrive inside the window.
//   - Score-tiered ("hierarchical") selection. Scored budgets pass the
//     scores above a cut: the quantile of a streaming log-linear histogram
//     (32 bins per octave, one increment per event, no sort) at which the
//     working fraction lies above. Nodes publish their cut and average the
//     cluster's cuts, weighted by scores seen, so the whole cluster cuts at
//     one score estimated from all of its traffic; and scored budgets make
//     up small lags over at least a tenth of the window, because every
//     change of the working rate moves the cut.
//   - Nesting. A pass must fit every level up to the root: a lane asks its
//     parent's lane for the same source, and a level that would pass but is
//     refused above keeps its credit instead of spending it.
//   - Sharing. Lanes count with single-writer atomics, the controller
//     publishes its parameters with one atomic pointer: no data race, no
//     lock on the hot path, and decisions scale with cores.
//
// # Changing budgets while running
//
// Tree.Update replaces the set of budgets of a live tree, validated as a
// whole like NewTree (nothing changes on an error). A budget that keeps its
// name keeps its controller: counters, peers' reports and measured rates
// stay, and the new target, window, period, reserve, kind, scoring or
// parent applies from the next decision, paced from what was already
// achieved (counts of the current period carry over when the period
// itself changes). A new budget gets a controller whose lanes open on
// every source; a deleted one stops. A budget that is still some budget's
// parent cannot be deleted.
//
// Lanes are never touched by Update: they belong to their source's
// goroutine. The tree's budgets are a versioned, immutable table swapped
// atomically; each source's goroutine calls Source.Refresh between
// decisions (one atomic load when nothing changed), which opens, closes
// and adapts its own lanes. Until then a lane decides under the
// controller's new parameters (published through the same atomic pointer
// as every tune), with its old parent link; a lane of a deleted budget
// decides with the last parameters its controller published.
//
// The simulator in flow/sim proves these on scenarios in virtual time.
package flow
