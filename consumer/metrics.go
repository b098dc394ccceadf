package consumer

import (
	"math"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

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

	workingRate *prometheus.GaugeVec // budget
	idealRate   *prometheus.GaugeVec
	localShare  *prometheus.GaugeVec
	scoreCut    *prometheus.GaugeVec
	lagIdeal    *prometheus.GaugeVec

	commitSeconds *prometheus.HistogramVec // phase: wait (partitions going idle), end (flush and commit)

	consumerLag *prometheus.GaugeVec // topic, partition
	assigned    prometheus.Gauge
	viewAge     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
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
	reg.MustRegister(m.dropped, m.assigned, m.viewAge)
	return m
}

// snapshot sets the gauges of one budget from its controller's snapshot.
func (m *metrics) snapshot(s flow.Snapshot) {
	m.workingRate.WithLabelValues(s.Budget).Set(s.WorkingPassRate)
	m.idealRate.WithLabelValues(s.Budget).Set(s.IdealPassRate)
	m.localShare.WithLabelValues(s.Budget).Set(s.LocalProportion)
	cut := s.Cut
	if math.IsInf(cut, 0) || math.IsNaN(cut) {
		cut = math.MaxFloat64
	}
	m.scoreCut.WithLabelValues(s.Budget).Set(cut)
	m.lagIdeal.WithLabelValues(s.Budget).Set(s.Lag)
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
// only by the partition's goroutine.
type counts struct {
	offered  []uint64  // by budget index
	passed   []uint64  // by budget index
	rewards  []float64 // by budget index
	rejected map[rejectKey]uint64
	// the run of rejects with one key, not yet in rejected: a map update
	// per event costs more than the rest of counting
	lastReject  rejectKey
	lastRejects uint64
	dead        map[decode.Reason]uint64
	routed      map[routeKey]uint64
	dropped     uint64
}

func newCounts(budgets int) counts {
	return counts{
		offered:  make([]uint64, budgets),
		passed:   make([]uint64, budgets),
		rewards:  make([]float64, budgets),
		rejected: map[rejectKey]uint64{},
		dead:     map[decode.Reason]uint64{},
		routed:   map[routeKey]uint64{},
	}
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
	if c.lastRejects > 0 {
		c.rejected[c.lastReject] += c.lastRejects
		c.lastRejects = 0
	}
}

// flush adds c to the metrics and zeroes c. The partition must be idle.
func (c *counts) flush(m *metrics, budgets []string) {
	c.foldRejects()
	for i, b := range budgets {
		if c.offered[i] > 0 {
			m.offered.WithLabelValues(b).Add(float64(c.offered[i]))
			c.offered[i] = 0
		}
		if c.passed[i] > 0 {
			m.passed.WithLabelValues(b).Add(float64(c.passed[i]))
			c.passed[i] = 0
		}
		if c.rewards[i] > 0 {
			m.rewards.WithLabelValues(b).Add(c.rewards[i])
			c.rewards[i] = 0
		}
	}
	for k, n := range c.rejected {
		m.rejected.WithLabelValues(k.budget, k.reason).Add(float64(n))
	}
	clear(c.rejected)
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
