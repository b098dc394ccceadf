package consumer

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
)

// metrics are the worker's Prometheus collectors. Counters on the record
// path are kept per partition in plain integers and added here at every
// commit, so that partition goroutines share no cache line.
type metrics struct {
	offered      *prometheus.CounterVec // budget
	passed       *prometheus.CounterVec // budget
	rejected     *prometheus.CounterVec // budget, reason
	rewards      *prometheus.CounterVec // budget
	deadLettered *prometheus.CounterVec // reason
	deadLetters  atomic.Uint64          // deadLettered's sum, for the worker's status
	dropped      prometheus.Counter
	routed       *prometheus.CounterVec // layer, experiment, variant
	commits      *prometheus.CounterVec // result: committed, aborted
	requests     *prometheus.CounterVec // request: the Kafka request's name
	hanging      *prometheus.CounterVec // result: completed, unknown, failed

	workingRate *prometheus.GaugeVec // budget
	idealRate   *prometheus.GaugeVec
	localShare  *prometheus.GaugeVec
	scoreCut    *prometheus.GaugeVec
	lagIdeal    *prometheus.GaugeVec

	commitSeconds *prometheus.HistogramVec // phase: wait (partitions going idle), end (flush and commit)

	consumerLag *prometheus.GaugeVec // topic, partition
	assigned    prometheus.Gauge
	viewAge     prometheus.Gauge
	viewSkipped prometheus.Gauge
	openLanes   prometheus.Gauge

	series budgetSeries // the budgets that have series, and when they were last active
	// gauges: the budget gauges of each active controller, set from its
	// snapshot, and the tuner pass that last met it (the tuner's
	// goroutine only)
	gauges     map[*flow.Controller]*budgetGauges
	gaugesPass uint64
}

// budgetGauges are the gauge series of one budget, as of the snapshot
// they were last set from.
type budgetGauges struct {
	at   time.Time // the snapshot's instant
	gen  uint64    // series.gen when the handles were taken
	pass uint64
	g    [5]prometheus.Gauge // working, ideal, local share, cut, lag
	over bool                // the budget had no series of its own (OverflowBudget) as of gen
}

func newMetrics(reg prometheus.Registerer, budgetSeries int) *metrics {
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttler_" + name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	gv := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "throttler_" + name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	m := &metrics{
		offered:      cv("offered_total", "Events that reached their budget's decision.", "budget"),
		passed:       cv("passed_total", "Events that passed every level of their budget.", "budget"),
		rejected:     cv("rejected_total", "Events rejected, by the budget that refused them and why.", "budget", "reason"),
		rewards:      cv("rewards_total", "Sum of the reward values received.", "budget"),
		deadLettered: cv("dead_lettered_total", "Records sent to the dead-letter topic, by reason.", "reason"),
		routed:       cv("routed_total", "Passed events assigned to an experiment variant.", "layer", "experiment", "variant"),
		commits:      cv("commits_total", "Transactions (or offset commits) ended, by result.", "result"),
		requests:     cv("kafka_requests_total", "Requests the worker's Kafka clients wrote to brokers, by kind (Fetch, Produce, EndTxn, ...): the coordination and polling a worker costs, whatever its traffic.", "request"),
		hanging:      cv("hanging_transactions_total", "Transactions Kafka left open on a partition the worker writes: completed (their marker written), unknown (outcome not logged), failed (marker refused).", "result"),
		workingRate:  gv("working_pass_rate", "Fraction of events passed now, lag corrected.", "budget"),
		idealRate:    gv("ideal_pass_rate", "Fraction of events to pass on the ideal course.", "budget"),
		localShare:   gv("local_traffic_proportion", "Share of the cluster's traffic this worker sees.", "budget"),
		scoreCut:     gv("score_cut", "Current score cut of a scored budget.", "budget"),
		lagIdeal:     gv("lag_behind_ideal", "Ideal minus achieved amount; positive when behind.", "budget"),
		consumerLag:  gv("consumer_lag", "Records between the last processed offset and the high watermark.", "topic", "partition"),
	}
	m.commitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "throttler_commit_seconds",
		Help:    "Time of the phases of a commit: wait (for partitions to go idle) and end (flush and commit).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"phase"})
	reg.MustRegister(m.commitSeconds)
	m.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "throttler_dropped_total", Help: "Events dropped by a stage, or rejected with no rejected topic."})
	m.assigned = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_assigned_partitions", Help: "Partitions this worker owns."})
	m.viewAge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_stats_view_age_seconds", Help: "Time since the stats view last applied a record."})
	m.openLanes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_open_lanes", Help: "Lanes (budget x owned partition) open on this worker: those with an event in the last lane idle span."})
	m.viewSkipped = prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttler_stats_records_skipped",
		Help: "Stats topic records the stats view skipped since the worker started: they do not decode, or break the limits (docs/operations.md)."})
	reg.MustRegister(m.dropped, m.assigned, m.viewAge, m.viewSkipped, m.openLanes)
	m.series.last = map[string]*seriesOf{}
	m.series.max = budgetSeries
	m.gauges = map[*flow.Controller]*budgetGauges{}
	return m
}

// snapshot sets the gauges of one budget from its controller's snapshot.
//
// A controller not tuned since its gauges were last set changes nothing,
// and costs a map lookup: the gauges of the controllers a worker holds
// follow those that are tuned, not all of them. Called by the tuner's
// goroutine, between beginGauges and endGauges.
func (m *metrics) snapshot(c *flow.Controller) {
	bg := m.gauges[c]
	if bg == nil {
		bg = &budgetGauges{}
		m.gauges[c] = bg
	}
	bg.pass = m.gaugesPass
	s := c.Snapshot()
	gen := m.series.generation()
	if s.At.Equal(bg.at) && gen == bg.gen && (bg.g[0] != nil || bg.over) {
		return
	}
	bg.at = s.At
	if m.series.label(s.Budget) == OverflowBudget {
		// no series of its own: gauges of several budgets do not add up
		bg.g, bg.gen, bg.over = [5]prometheus.Gauge{}, gen, true
		return
	}
	if gen != bg.gen || bg.g[0] == nil {
		for i, v := range []*prometheus.GaugeVec{m.workingRate, m.idealRate, m.localShare, m.scoreCut, m.lagIdeal} {
			bg.g[i] = v.WithLabelValues(s.Budget)
		}
		bg.gen, bg.over = gen, false
	}
	cut := s.Cut
	if math.IsInf(cut, 0) || math.IsNaN(cut) {
		cut = math.MaxFloat64
	}
	for i, v := range [5]float64{s.WorkingPassRate, s.IdealPassRate, s.LocalProportion, cut, s.Lag} {
		bg.g[i].Set(v)
	}
}

// beginGauges starts a tuner pass over the active controllers (snapshot
// for each); endGauges forgets the controllers the pass did not meet.
func (m *metrics) beginGauges() { m.gaugesPass++ }

func (m *metrics) endGauges() {
	for c, bg := range m.gauges {
		if bg.pass != m.gaugesPass {
			delete(m.gauges, c)
		}
	}
}

// rejectKey identifies a rejected counter of a partition.
type rejectKey struct {
	budget string
	reason string
}

// routeKey identifies a routed counter.
type routeKey struct {
	layer, experiment, variant string
}

// counts are one partition's metric counters since the last flush, written
// only by the partition's goroutine. Budgets are counted by name: a
// partition holds the counters of the budgets it counted in its last
// keepIdleFlushes flushes, not of every budget.
type counts struct {
	budgets map[string]*budgetCount
	last    *budgetCount   // the budget counted last: events of one budget often come in runs
	dirty   []*budgetCount // the budgets counted since the last flush: what it visits
	flushes int            // flushes so far
	// the run of rejects with one key, not yet in its budget's rejects: a
	// lookup per event costs more than the rest of counting
	lastReject  rejectKey
	lastRejects uint64
	dead        map[decode.Reason]uint64
	routed      map[routeKey]uint64
	dropped     uint64
}

// budgetCount is one budget's counters in a partition's counts, and the
// metric counters they are flushed to: kept from one flush to the next
// while the budget is active on the partition (keepIdleFlushes), so that a
// flush adds to them without looking them up (WithLabelValues hashes the
// labels under the vector's lock: at a thousand budgets, most of a
// commit's flushing).
type budgetCount struct {
	name            string // owned: not the event's
	offered, passed uint64
	rewards         float64
	rejects         []rejectCount // by reason; this budget refused the events
	dirty           bool          // in counts.dirty
	lastFlush       int           // counts.flushes when it last counted something

	gen                         uint64 // the series generation the counters below belong to
	offeredC, passedC, rewardsC prometheus.Counter
}

// rejectCount is the count of one reject reason of a budget.
type rejectCount struct {
	reason string // owned
	n      uint64
	c      prometheus.Counter // nil until flushed in generation budgetCount.gen
}

// keepIdleFlushes is how many flushes a budget's counters are kept after
// it last counted something on the partition.
const keepIdleFlushes = 20

func newCounts() counts {
	return counts{
		budgets: map[string]*budgetCount{},
		dead:    map[decode.Reason]uint64{},
		routed:  map[routeKey]uint64{},
	}
}

// budget returns the counters of a budget, adding them when missing.
func (c *counts) budget(name string) *budgetCount {
	if c.last != nil && c.last.name == name {
		return c.last
	}
	b := c.budgets[name]
	if b == nil {
		b = &budgetCount{name: strings.Clone(name)}
		c.budgets[b.name] = b
	}
	if !b.dirty {
		b.dirty = true
		c.dirty = append(c.dirty, b)
	}
	c.last = b
	return b
}

// reject counts one rejected event.
func (c *counts) reject(k rejectKey) {
	if k != c.lastReject {
		c.foldRejects()
		c.lastReject = k
	}
	c.lastRejects++
}

func (c *counts) foldRejects() {
	if c.lastRejects == 0 {
		return
	}
	k := c.lastReject
	c.budget(k.budget).refusedN(k.reason, c.lastRejects)
	c.lastRejects = 0
}

// refused counts one event the budget refused for reason. The caller
// found b with counts.budget (it is listed for the next flush): an event
// refused by its own budget is counted without a second lookup.
func (b *budgetCount) refused(reason string) { b.refusedN(reason, 1) }

func (b *budgetCount) refusedN(reason string, n uint64) {
	i := 0
	for i < len(b.rejects) && b.rejects[i].reason != reason {
		i++
	}
	if i == len(b.rejects) { // owned: it becomes a label value
		b.rejects = append(b.rejects, rejectCount{reason: strings.Clone(reason)})
	}
	b.rejects[i].n += n
}

// flush adds c to the metrics and zeroes c; budgets idle for
// keepIdleFlushes flushes are forgotten. The partition must be idle.
func (c *counts) flush(m *metrics) {
	c.foldRejects()
	s := &m.series
	// One lock for the budgets' series: a sweep deletes series under it
	// (and starts a new generation), so none is deleted between a
	// budget's stamp and its adds.
	s.mu.Lock()
	for _, b := range c.dirty {
		b.dirty = false
		if !b.counted() {
			continue
		}
		b.lastFlush = c.flushes
		name := s.labelLocked(b.name) // the same within a generation
		if b.gen != s.gen {           // the sweep deleted series: look them up again
			b.gen = s.gen
			b.offeredC, b.passedC, b.rewardsC = nil, nil, nil
			for i := range b.rejects {
				b.rejects[i].c = nil
			}
		}
		addTo(&b.offeredC, m.offered, name, float64(b.offered))
		addTo(&b.passedC, m.passed, name, float64(b.passed))
		addTo(&b.rewardsC, m.rewards, name, b.rewards)
		b.offered, b.passed, b.rewards = 0, 0, 0
		for i := range b.rejects {
			r := &b.rejects[i]
			if r.n == 0 {
				continue
			}
			if r.c == nil {
				r.c = m.rejected.WithLabelValues(name, r.reason)
				s.rejectedLocked(name, r.reason)
			}
			r.c.Add(float64(r.n))
			r.n = 0
		}
	}
	s.mu.Unlock()
	clear(c.dirty)
	c.dirty = c.dirty[:0]
	c.last = nil // the next count marks its budget dirty
	c.lastReject = rejectKey{}
	// Forget the budgets idle for keepIdleFlushes, every keepIdleFlushes
	// flushes: a walk of the kept budgets, once for as many flushes.
	if c.flushes++; c.flushes%keepIdleFlushes == 0 {
		for name, b := range c.budgets {
			if c.flushes-b.lastFlush > keepIdleFlushes {
				delete(c.budgets, name)
			}
		}
	}
	for k, n := range c.dead {
		m.deadLettered.WithLabelValues(string(k)).Add(float64(n))
		m.deadLetters.Add(n)
	}
	clear(c.dead)
	for k, n := range c.routed {
		m.routed.WithLabelValues(k.layer, k.experiment, k.variant).Add(float64(n))
	}
	clear(c.routed)
	if c.dropped > 0 {
		m.dropped.Add(float64(c.dropped))
		c.dropped = 0
	}
}

// addTo adds n, when positive, to *c, budget's counter of vec, made on
// its first count: a budget that only refuses (a parent) has no offered
// series.
func addTo(c *prometheus.Counter, vec *prometheus.CounterVec, budget string, n float64) {
	if n <= 0 {
		return
	}
	if *c == nil {
		*c = vec.WithLabelValues(budget)
	}
	(*c).Add(n)
}

// counted reports whether b counted something since the last flush.
func (b *budgetCount) counted() bool {
	if b.offered > 0 || b.passed > 0 || b.rewards > 0 {
		return true
	}
	for _, r := range b.rejects {
		if r.n > 0 {
			return true
		}
	}
	return false
}

// OverflowBudget is the budget label of the series that count the
// budgets over a worker's BudgetSeries: the empty name, which no budget
// has, and which Prometheus shows as a series without the label.
const OverflowBudget = ""

// budgetSeries tracks the budgets that have metric series on this worker,
// so that those of budgets no longer active here are deleted (sweep):
// /metrics then holds the budgets active on the worker, not every budget
// it ever saw. At most max budgets have series of their own, taken in the
// order they become active; the others count in the series of
// OverflowBudget until a sweep makes room. Safe for concurrent use.
type budgetSeries struct {
	mu   sync.Mutex
	now  time.Time            // the instant seen stamps: the last sweep's
	max  int                  // budgets with series of their own, at most
	last map[string]*seriesOf // by budget with series of its own
	gen  uint64               // bumped by a sweep that deletes series: the counters budgetCounts keep are stale
}

// seriesOf is what a budget's series need to be found and deleted.
type seriesOf struct {
	at      time.Time // last seen active
	reasons []string  // of its rejected series
}

// generation returns gen.
func (s *budgetSeries) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// label notes that budget is active (counted, or has a controller here)
// and returns the budget label of its series: its name, or
// OverflowBudget when max budgets have series of their own.
func (s *budgetSeries) label(budget string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.labelLocked(budget)
}

// labelLocked is label with s.mu held. Within a generation the answer
// for a budget does not change: room is made only by a sweep that
// deletes series, which starts a new one.
func (s *budgetSeries) labelLocked(budget string) string {
	if e := s.last[budget]; e != nil {
		if e.at.Before(s.now) {
			e.at = s.now
		}
		return budget
	}
	if len(s.last) >= s.max {
		return OverflowBudget
	}
	s.last[strings.Clone(budget)] = &seriesOf{at: s.now}
	return budget
}

// rejectedLocked notes that label has a rejected series of reason.
func (s *budgetSeries) rejectedLocked(label, reason string) {
	if e := s.last[label]; e != nil && !slices.Contains(e.reasons, reason) {
		e.reasons = append(e.reasons, reason)
	}
}

// sweep deletes the series of the budgets not seen active for idle, and
// stamps what is seen next with now. It costs O(budgets with series); each
// series is deleted by its labels, not looked for.
func (m *metrics) sweep(now time.Time, idle time.Duration) (deleted int) {
	s := &m.series
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
	for b, e := range s.last {
		if now.Sub(e.at) < idle {
			continue
		}
		delete(s.last, b)
		for _, v := range []*prometheus.CounterVec{m.offered, m.passed, m.rewards} {
			v.DeleteLabelValues(b)
		}
		for _, r := range e.reasons {
			m.rejected.DeleteLabelValues(b, r)
		}
		for _, g := range []*prometheus.GaugeVec{m.workingRate, m.idealRate, m.localShare, m.scoreCut, m.lagIdeal} {
			g.DeleteLabelValues(b)
		}
		deleted++
	}
	if deleted > 0 {
		s.gen++
	}
	return deleted
}

// requestHook counts the requests the clients it is given to write
// (kgo.HookBrokerWrite).
type requestHook struct{ m *metrics }

func (h requestHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.m.requests.WithLabelValues(kmsg.NameForKey(key)).Inc()
	}
}
