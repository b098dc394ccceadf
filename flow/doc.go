// Package flow holds throttler's algorithms: the decentralized pacing
// controller, its score sketch and reward model, per-key GCRA caps, and
// delay budgets. It knows nothing of Kafka: time is always
// an argument, and the counters peers exchange pass through the Exchange
// interface. docs/pacing.md compares the controller with the limiter it
// comes from (the decentralized cluster limiter) and says why it departs
// from it.
//
// # Pacing
//
// A Budget is paced by one Controller per node, held in a Tree that links
// nested budgets. Each source of traffic the node owns (a Kafka partition)
// has a Lane per budget. Lane.Decide is the hot path: lock-free, no
// allocation, one goroutine per lane; a pass must fit every level of the
// budget tree. Tree.Tune (every tune interval) re-computes each
// controller's parameters from its lanes' counters; Tree.Sync (every sync
// interval, after the node published its Reports) also takes in the peers'
// latest reports from the Exchange. A Snapshot shows a controller's
// quantities as of its last tune.
//
// Each tune:
//
//   - estimates the cluster: this node's lanes exactly; each peer source at
//     its last report, plus what it did since, extrapolated from its
//     reported rates and this node's own pass fraction over the same span
//     (peers run the same controller); while this node's own traffic is
//     well above what it was over the span of a peer's last rates (a
//     backlog that every node reads at once after a common stall), the peer
//     is taken to offer its last known ratio to the own traffic, so that no
//     node takes itself for the whole cluster (a controller made again,
//     which never saw the own traffic over a peer's last report, judges the
//     surge against the peer's reported rate at that ratio). A pause of one
//     node (a starved machine, a fetch that stalls) holds its events back,
//     to come as a backlog: while this node's own lanes pause (no event
//     over two tune intervals where their smoothed rate expects several),
//     its own traffic counts at that smoothed rate, and a peer whose last
//     report's span caught such a pause (its traffic far short of its
//     smoothed rate, while the own went on, and no burst of its own in that
//     smoothed rate: the fall after a backlog it read is the backlog's end)
//     counts at its smoothed rate, so that no node raises its fraction to
//     make up passes the backlog brings. A peer is fresh until its report
//     is older than StaleAfter plus the exchange's lateness (how much later
//     than two sync intervals reports have been arriving, learnt from the
//     reports themselves); a stale peer is counted at its report plus what
//     it may have passed in a sync interval since, unless no peer is fresh
//     (the exchange is down): then every peer is extrapolated and counted
//     at its rates over its last reports, so that every node takes the
//     cluster for the same and passes the same fraction. Sources not heard
//     from yet are assumed to carry what the sources heard from carry, this
//     node holding its share (Tree.SetShare); what they passed before is
//     filled in so only in a controller's first warm-up (a source it has
//     not heard from after listening that long is new, and has passed
//     nothing);
//   - computes the wanted cluster pass rate: what follows the ideal curve
//     (the target spread evenly over the window or period, finishing
//     Reserve before its end) from the amount achieved, making up a lag or
//     an excess over the acceleration horizon, catching up at five times
//     the ideal rate at most, and near the end over no less than the
//     exchange's lateness;
//   - turns it into the lanes' parameters: the working pass fraction (the
//     wanted rate over the cluster's offered rate), which an unscored lane
//     applies by error diffusion (a credit that grows by the fraction per
//     event, one pass per whole credit), and, for scored budgets, the score
//     cut above which that fraction of the traffic lies: a quantile of a
//     log-linear histogram of the scores seen, averaged with the peers'
//     cuts. Until traffic is measured, lanes pass at the ideal rate from a
//     token bucket.
//
// Reward budgets count rewards (Lane.Reward) instead of passes. Their
// controller fits the conversion ratio and the reward delay on the
// cluster's passes and rewards (R(t) ≈ c·P(t−d), on increments weighed as
// Poisson counts; or, when it fits better, delays drawn from an
// exponential distribution of mean d), counts the rewards still to come
// from the passes in flight, and leads the ideal curve by the delay. An optional prior
// (Budget.Conversion, Budget.RewardDelay) paces the start and is blended
// with the fit; a node without one takes up its peers' fits
// (Report.Conversion, RewardDelay); with neither, passes follow the ideal
// curve scaled by an uninformed ratio (the log-scale middle of the ratios
// at which the target can be met), every pass not yet accounted for by a
// reward counting as in flight, ahead of it by as long as rewards have
// not come, until the first rewards are fitted. A reward budget stops a
// standard deviation of the rewards still to come short of its target.
//
// Period budgets ("n per minute") re-target at each period; lanes roll
// their counters at the boundary without waiting for the controller. Delay
// budgets hold events back until the next period instead of rejecting them
// (see delay.go).
//
// # Over-target protection
//
// A budget is money: three guards keep the estimates' errors from
// spending more than the target (see guard.go). The hard stop exhausts a
// budget once what is achieved, counting what stale peers may have passed
// unseen, plus a margin for the error of the fresh peers' estimated passes,
// reaches the target. A node's lanes share an allowance, refilled at twice
// the node's part of the wanted rate and never more than its part of what
// is left of the target, so that a burst (a backlog read at once after a
// stall) is not passed at a fraction tuned for the traffic before it, nor
// past the target before the next tune; a budget its traffic cannot
// exhaust gets its part of what is left at once, so that a budget far
// from its target never refuses a backlog for its speed; after silence
// across the cluster (no rate measured, traffic earlier in the period)
// the allowance holds the node's part of the lag behind the ideal curve,
// so that a burst after silence brings the budget back to its course,
// however dense. And the last few passes of a
// budget, as well as every pass of an unscored budget too small to give
// each node a pass per sync interval, are made by one node at a time: the
// one owning the first source by name.
//
// A node that was frozen (a process stopped and woken, a VM paused, a
// clock stepped forward: a gap of more than twice StaleAfter between two
// visit rounds) knows its picture is older than the gap: what its peers
// passed meanwhile is missing, and the silence looks like an outage of
// the exchange. Its lanes that decide before its tuner runs again find an
// allowance granted that long past its tune, which leaves them
// only its free passes; and after the tuner's first round it passes only
// the budgets far from their targets (even if every peer passed every
// event it was offered since its report) until it hears from a peer a
// report made after the gap, or for a report age at most. A source whose
// ownership was lost rather than handed over (Tree.Lose: the node's group
// session expired) takes the exchange's latest report, not the lanes'
// own counts, which miss what its next owner passed.
//
// The margin is twice the error that the peers' next reports show in what
// they were estimated to have passed, judged by node (the sources a node
// publishes at one instant together): that error sets how close to its
// target a budget can end. Over the closing stretch of a window (its last
// two report ages, see closing.go) an unscored pass budget is paced by
// rate rather than by a working fraction: each node passes its part of
// the wanted cluster rate, its sources' offered rate over the cluster's,
// read from the reports as of an instant every node has them, so that
// what a peer passed since its report is known whatever its traffic did.
// The stretch begins only if the cluster's traffic held steady over the
// seconds the parts are read from; over it the margin is the error of its
// own estimates, and the course aimed at runs half that margin under the
// ideal curve.
//
// A scored budget's cut follows a change of the traffic's regime (a
// flash crowd on some nodes) at once: a peer's cut counts only once the
// peer could have heard of it. In a crowd on traffic that held before it,
// the budget may run up to 1% of its target ahead of its course, taking
// more of the crowd's best scores and fewer ordinary ones after.
//
// # Cost follows activity
//
// A Tree holds every budget's definition, cheaply; a budget gets a
// controller on a node when a source of the node opens its first lane
// (lanes open on a budget's first event on a source, restored from the
// committed counters through Open's restore), and loses it DropAfter after
// its last lane closed (Source.Release closes lanes idle for a while). A
// controller created late starts from what its node knows: it reads its
// peers at once (Peers), knows the node offered nothing for the budget
// before it, and takes the exchange's lateness the node's other
// controllers learnt. Tune and Sync visit only the controllers with
// traffic since their last visit, or due (IdleRetune, a period's end),
// Tune leaves those of budgets far from their targets to Sync, and a
// light budget's visits wait for 20 of its events or a few sync
// intervals (its rest), so that a round costs what is active;
// sources list the lanes whose counters changed (Source.Changed) for
// publication.
//
// # Changing budgets while running
//
// Tree.Apply changes some budgets, Tree.Update replaces the whole set
// (validated as a whole like NewTree: nothing changes on an error). A
// budget that keeps its name keeps its controller: counters, peers'
// reports and measured rates stay, and the new definition applies from the
// next decision, paced from what was already achieved (counts of the
// current period carry over when the period itself changes). A new
// budget's lanes open on its first event; a deleted one stops; a budget
// that is still some budget's parent cannot be deleted.
//
// Lanes belong to their source's goroutine, so Apply never touches them:
// the definitions are versioned, and each source's goroutine calls
// Source.Refresh between decisions (one atomic load when nothing changed),
// which closes and adapts its own lanes.
//
// # Caps and limits
//
// Cap is a per-key frequency cap (GCRA, with the semantics of redis-cell's
// CL.THROTTLE): one timestamp per key in an open-addressing table without
// pointers, owned by one goroutine. Delay budgets (Budget.Delay) are
// tower's RateLimit across a cluster: an event over the period's limit
// waits for the next period instead of being rejected.
//
// The simulator in flow/sim runs these controllers on scenarios in virtual
// time: nodes and partitions that come and go, crashes, broker restarts,
// delayed and lossy exchanges, drifting scores and rewards.
package flow
