// Package app builds a throttler worker from a configuration: the flow
// tree of its budgets, the decoder of its field paths, the splitter of its
// layers, the caps and variant limits, and the worker's options. It is the
// way to run what `throttler run` runs inside a Go program of one's own:
// config.Parse (or config.Load) a file, NewWorker, Worker.Run; options
// given to NewWorker (a logger, a Prometheus registry, kgo options) apply
// after the configuration's. It is the only package that knows both the
// config and the worker, so that neither needs the other. The worker
// serves the configuration's HTTP endpoints and follows its control topic,
// as `throttler run` does; signals, logging setup and exit codes stay the
// caller's.
package app

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/controlfeed"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/splitter"
)

// Parts are what a configuration makes of a worker.
type Parts struct {
	Tree    *flow.Tree
	Decoder *decode.Decoder
	// Registry gives the schemas of Avro and Protobuf topics; nil when
	// every topic is JSON.
	Registry *schemaregistry.Source
	// ClientOpts reach the brokers: seed brokers, TLS, SASL and the
	// timeouts that are set.
	ClientOpts []kgo.Opt
	// Opts are the worker's options, ClientOpts among them.
	Opts []consumer.Opt
}

// FromConfig makes the parts of a worker from a validated configuration:
// the flow tree of its budgets (and variant limits), the decoder of its
// field paths, and the options of its topics, delivery, intervals,
// splitter, caps and HTTP listener.
func FromConfig(c *config.Config) (Parts, error) {
	budgets, err := c.FlowBudgets()
	if err != nil {
		return Parts{}, err
	}
	limits, limitBudgets := variantLimitsOf(c)
	tree, err := flow.NewTree(append(budgets, limitBudgets...), flow.SyncInterval(c.SyncInterval))
	if err != nil {
		return Parts{}, err
	}
	fm, err := formatsOf(c)
	if err != nil {
		return Parts{}, err
	}
	dec, err := decoder(c, fm.input...)
	if err != nil {
		return Parts{}, err
	}
	var sp *splitter.Splitter
	if len(c.Layers) > 0 {
		if sp, err = splitter.New(c.Layers); err != nil {
			return Parts{}, err
		}
	}
	conn, err := kafkaconn.FromConfig(c)
	if err != nil {
		return Parts{}, &consumer.ConfigError{Option: "security", Reason: err.Error()}
	}
	conn = append(conn, timeoutOpts(c.Timeouts)...)
	if c.GroupProtocol == config.GroupProtocolConsumer {
		conn = append(conn, kgo.ServerSideBalancer())
	}
	opts, err := workerOpts(c, sp, limits)
	if err != nil {
		return Parts{}, err
	}
	if topic := c.Topics.Control; topic != "" {
		opts = append(opts, consumer.OnStart(FollowControl(topic)))
	}
	opts = append(append(opts, consumer.RewardDecoding(fm.rewards...)), fm.worker...)
	return Parts{Tree: tree, Decoder: dec, Registry: fm.source, ClientOpts: conn,
		Opts: append([]consumer.Opt{consumer.ClientOpts(conn...)}, opts...)}, nil
}

// FollowControl returns the StartFunc that applies the control topic's
// budget changes to the worker (controlfeed.Start).
func FollowControl(topic string) consumer.StartFunc {
	return func(ctx context.Context, w *consumer.Worker) (func(), error) {
		return controlfeed.Start(ctx, topic, w.ClientOpts(), w, w.Registerer(), w.Logger())
	}
}

// NewWorker builds a worker from a validated configuration (FromConfig);
// opts are applied after the configuration's (for a logger, a registry,
// extra kgo options with consumer.ClientOpts, …). The tree is returned
// too, for status pages.
func NewWorker(c *config.Config, opts ...consumer.Opt) (*consumer.Worker, *flow.Tree, error) {
	parts, err := FromConfig(c)
	if err != nil {
		return nil, nil, err
	}
	w, err := consumer.NewWorker(parts.Tree, parts.Decoder, append(parts.Opts, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return w, parts.Tree, nil
}

// decoder returns the decoder of the configuration's fields, with more
// options (the formats'). It accepts every budget name: the worker's flow
// tree says which exist (its decide stage dead-letters the others), and
// they change while it runs.
func decoder(c *config.Config, more ...decode.Opt) (*decode.Decoder, error) {
	f := c.Fields
	dopts := []decode.Opt{decode.KeyPath(f.Key), decode.IDPath(f.ID), decode.ScorePath(f.Score), decode.ScoreExpr(f.ScoreExpr), decode.TimePath(f.Time),
		// Experiments bucket events by key: a keyless event is a bad
		// record rather than one that escapes bucketing unseen.
		decode.RequireKey(len(c.Layers) > 0)}
	if f.Budget != "" {
		dopts = append(dopts, decode.BudgetPath(f.Budget))
	}
	return decode.NewDecoder(append(dopts, more...)...)
}

// workerOpts returns the worker options of the configuration but the
// connection's.
func workerOpts(c *config.Config, sp *splitter.Splitter, limits []pipeline.VariantLimit) ([]consumer.Opt, error) {
	delivery := consumer.ExactlyOnce
	if c.Delivery == config.DeliveryAtLeastOnce {
		delivery = consumer.AtLeastOnce
	}
	rewardBudget := c.Rewards.Budget
	if rewardBudget == "" {
		rewardBudget = decode.DefaultBudgetPath
	}
	all := []consumer.Opt{
		consumer.Group(c.Group),
		consumer.WithTopics(consumer.Topics{
			Input:      c.Topics.Input,
			Rewards:    c.Topics.Rewards,
			Output:     c.Topics.Output,
			Rejected:   c.Topics.Rejected,
			DeadLetter: c.Topics.DeadLetter,
			Stats:      c.Topics.Stats,
			Control:    c.Topics.Control,
		}),
		consumer.WithDelivery(delivery),
		consumer.WithSplitter(sp),
		consumer.WithVariantLimits(limits...),
		consumer.RewardPaths(rewardBudget, c.Rewards.Value),
		consumer.HTTPListen(c.HTTP.Listen),
	}
	if c.HTTP.BudgetSeries > 0 {
		all = append(all, consumer.BudgetSeries(c.HTTP.BudgetSeries))
	}
	if h := c.HTTP; len(h.AllowedHosts) > 0 || h.TLS.CertFile != "" || h.Auth.On() {
		password, token, p := h.Auth.Resolve()
		if p != nil {
			return nil, fmt.Errorf("http.auth.%s: %s", p.Field, p.Reason)
		}
		all = append(all, consumer.HTTPGuard(consumer.HTTPSecurity{AllowedHosts: h.AllowedHosts, User: h.Auth.User, Password: password,
			Token: token, CertFile: h.TLS.CertFile, KeyFile: h.TLS.KeyFile}))
	}
	if c.Rewards.MaxValue > 0 {
		all = append(all, consumer.MaxReward(c.Rewards.MaxValue))
	}
	if len(c.Caps) > 0 {
		specs, err := capSpecs(c)
		if err != nil {
			return nil, err
		}
		all = append(all, consumer.WithCaps(c.Topics.Caps, specs...))
	}
	if c.DedupWindow > 0 {
		all = append(all, consumer.DedupWindow(c.DedupWindow))
	}
	if c.SyncInterval > 0 {
		all = append(all, consumer.SyncInterval(c.SyncInterval))
	}
	if c.CommitInterval > 0 {
		all = append(all, consumer.CommitInterval(c.CommitInterval))
	}
	return all, nil
}

// capSpecs converts the caps of a configuration.
func capSpecs(c *config.Config) ([]pipeline.CapSpec, error) {
	specs := make([]pipeline.CapSpec, len(c.Caps))
	for i, cp := range c.Caps {
		count, period, err := config.ParseRate(cp.Rate)
		if err != nil {
			return nil, &consumer.ConfigError{Option: fmt.Sprintf("caps[%d].rate", i), Reason: err.Error()}
		}
		key := cp.Key
		if key == c.Fields.Key {
			key = "" // the decoded event key
		}
		specs[i] = pipeline.CapSpec{Name: cp.Name, KeyPath: key, QuantityPath: cp.Quantity, Burst: cp.Burst, Count: count, Period: period}
	}
	return specs, nil
}

// variantLimitsOf returns the variant limits of a configuration and their
// flow budgets.
func variantLimitsOf(c *config.Config) ([]pipeline.VariantLimit, []flow.Budget) {
	var limits []pipeline.VariantLimit
	var budgets []flow.Budget
	for _, l := range c.VariantLimits() {
		limits = append(limits, pipeline.VariantLimit{Layer: l.Layer, Experiment: l.Experiment, Variant: l.Variant, Budget: l.Budget.Name, Fallback: l.Fallback})
		budgets = append(budgets, l.Budget)
	}
	return limits, budgets
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
