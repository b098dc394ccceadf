package stats

import "time"

// ViewOpt configures a View (NewView). Options are applied in order; the
// zero set of options gives the defaults documented on each option.
type ViewOpt interface {
	apply(*cfg)
}

type cfg struct {
	now func() time.Time
}

func defaultCfg() cfg {
	return cfg{now: time.Now}
}

func (c *cfg) validate() error {
	if c.now == nil {
		return errInvalidConfig("nil clock")
	}
	return nil
}

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

// WithClock sets the clock a View reads to stamp applied records and to
// compute Age, overriding the default time.Now. The View only measures
// elapsed time with it; reports keep the instants their publishers wrote.
func WithClock(now func() time.Time) ViewOpt {
	return opt(func(c *cfg) { c.now = now })
}
