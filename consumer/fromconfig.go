package consumer

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/splitter"
)

// FromConfig builds a worker from a validated configuration: the flow tree
// of its budgets, the decoder of its field paths, the splitter of its
// layers and the options of its topics, delivery, intervals and HTTP
// listener. opts are applied after those (for a logger, a registry, extra
// kgo options with ClientOpts, …). The tree is returned too, for status
// pages.
func FromConfig(c *config.Config, opts ...Opt) (*Worker, *flow.Tree, error) {
	budgets, err := c.FlowBudgets()
	if err != nil {
		return nil, nil, err
	}
	limits, limitBudgets := variantLimitsOf(c)
	tree, err := flow.NewTree(append(budgets, limitBudgets...), flow.SyncInterval(c.SyncInterval))
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(budgets))
	for i, b := range budgets {
		names[i] = b.Name
	}
	f := c.Fields
	dopts := []DecodeOpt{KeyPath(f.Key), IDPath(f.ID), ScorePath(f.Score), ScoreExpr(f.ScoreExpr), TimePath(f.Time),
		// Experiments bucket events by key: a keyless event is a bad
		// record rather than one that escapes bucketing unseen.
		RequireKey(len(c.Layers) > 0)}
	if f.Budget != "" {
		dopts = append(dopts, BudgetPath(f.Budget))
	}
	dec, err := NewDecoder(names, dopts...)
	if err != nil {
		return nil, nil, err
	}
	var sp *splitter.Splitter
	if len(c.Layers) > 0 {
		if sp, err = splitter.New(c.Layers); err != nil {
			return nil, nil, err
		}
	}
	delivery := ExactlyOnce
	if c.Delivery == config.DeliveryAtLeastOnce {
		delivery = AtLeastOnce
	}
	rewardBudget := c.Rewards.Budget
	if rewardBudget == "" {
		rewardBudget = DefaultBudgetPath
	}
	conn, err := kafkaconn.FromConfig(c)
	if err != nil {
		return nil, nil, &ConfigError{Option: "security", Reason: err.Error()}
	}
	all := []Opt{
		ClientOpts(conn...),
		ClientOpts(timeoutOpts(c.Timeouts)...),
		Group(c.Group),
		WithTopics(Topics{
			Input:       c.Topics.Input,
			Rewards:     c.Topics.Rewards,
			Output:      c.Topics.Output,
			Rejected:    c.Topics.Rejected,
			DeadLetter:  c.Topics.DeadLetter,
			Stats:       c.Topics.Stats,
			Checkpoints: c.Topics.Checkpoints,
			Control:     c.Topics.Control,
		}),
		WithDelivery(delivery),
		WithSplitter(sp),
		WithVariantLimits(limits...),
		RewardPaths(rewardBudget, c.Rewards.Value),
		HTTPListen(c.HTTP.Listen),
	}
	if len(c.Caps) > 0 {
		specs, err := capSpecs(c)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, WithCaps(c.Topics.Caps, specs...))
	}
	if c.DedupWindow > 0 {
		all = append(all, DedupWindow(c.DedupWindow))
	}
	if c.SyncInterval > 0 {
		all = append(all, SyncInterval(c.SyncInterval))
	}
	if c.CommitInterval > 0 {
		all = append(all, CommitInterval(c.CommitInterval))
	}
	w, err := NewWorker(tree, dec, append(all, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return w, tree, nil
}

// timeoutOpts returns the kgo options of the timeouts that are set.
func timeoutOpts(t config.Timeouts) []kgo.Opt {
	var opts []kgo.Opt
	if t.Session > 0 {
		opts = append(opts, kgo.SessionTimeout(t.Session))
	}
	if t.Rebalance > 0 {
		opts = append(opts, kgo.RebalanceTimeout(t.Rebalance))
	}
	if t.Heartbeat > 0 {
		opts = append(opts, kgo.HeartbeatInterval(t.Heartbeat))
	}
	if t.Transaction > 0 {
		opts = append(opts, kgo.TransactionTimeout(t.Transaction))
	}
	return opts
}
