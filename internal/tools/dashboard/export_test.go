package dashboard

// MaxStreams bounds the event streams (GET /api/v1/events) open at once;
// one more is refused (503). Default DefaultMaxStreams (64).
func MaxStreams(n int) Opt { return optFunc(func(c *cfg) { c.maxStreams = n }) }
