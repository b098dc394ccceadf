package config

import (
	"time"

	"github.com/throttler/throttler/internal/defaults"
)

// Defaults of the optional fields. Group, SyncInterval, CommitInterval and
// BudgetSeries are package consumer's (consumer.DefaultGroup, …, the same values), so
// that a field left out of the file runs as an option left out of
// consumer.NewWorker.
const (
	DefaultGroup          = defaults.Group
	DefaultDelivery       = DeliveryExactlyOnce
	DefaultGroupProtocol  = GroupProtocolClassic
	DefaultSyncInterval   = defaults.SyncInterval
	DefaultCommitInterval = defaults.CommitInterval
	DefaultHTTPListen     = "127.0.0.1:9090"
	DefaultBudgetSeries   = defaults.BudgetSeries
	DefaultLogFormat      = "json"
	DefaultLogLevel       = "info"
	// DefaultPartitions is the partition count of created topics when
	// neither topics.partitions nor the input topic gives one.
	DefaultPartitions int32 = 12
	// MaxDedupWindow bounds dedup_window (ids kept per partition).
	MaxDedupWindow = 10_000_000
	// MinSyncInterval is the shortest sync_interval Validate accepts.
	MinSyncInterval = 10 * time.Millisecond
)

// ApplyDefaults fills every optional field left at its zero value with its
// default; fields already set are kept. Parse and Load call it; a Config
// built in code should call it before Validate.
func (c *Config) ApplyDefaults() { c.defaults() }

// defaults is the one place defaults are applied; each default is also
// stated on its field's doc comment.
func (c *Config) defaults() {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.Topics.DeadLetter == "" {
		c.Topics.DeadLetter = c.Group + ".dead-letter"
	}
	if c.Topics.Stats == "" {
		c.Topics.Stats = c.Group + ".stats"
	}
	c.capDefaults()
	if c.Topics.Control == "" {
		c.Topics.Control = ControlTopic(c.Group)
	}
	if c.Delivery == "" {
		c.Delivery = DefaultDelivery
	}
	if c.GroupProtocol == "" {
		c.GroupProtocol = DefaultGroupProtocol
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	for i := range c.Budgets {
		if c.Budgets[i].Kind == "" {
			c.Budgets[i].Kind = KindPasses
		}
		if c.Budgets[i].Action == "" {
			c.Budgets[i].Action = ActionReject
		}
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = DefaultHTTPListen
	}
	if c.HTTP.BudgetSeries == 0 {
		c.HTTP.BudgetSeries = DefaultBudgetSeries
	}
	if c.Log.Format == "" {
		c.Log.Format = DefaultLogFormat
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
}

// PartitionsFor returns the partition count for a topic the worker
// creates: Partitions when set, else input (the partition count of the
// first input topic) when positive, else DefaultPartitions.
func (t Topics) PartitionsFor(input int32) int32 {
	switch {
	case t.Partitions > 0:
		return t.Partitions
	case input > 0:
		return input
	}
	return DefaultPartitions
}
