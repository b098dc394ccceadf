package consumer

import "github.com/twmb/franz-go/pkg/kgo"

// StatsClientOpts adds kgo options for the stats view's client only (the
// reader that follows the stats topic), after ClientOpts: for example a
// kgo.Dialer that reaches the brokers through another route, or shorter
// request timeouts. The worker's other clients do not get them. Default
// none.
func StatsClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *cfg) { c.statsClientOpts = append(c.statsClientOpts, opts...) })
}
