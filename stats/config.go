package stats

import "time"

// ViewOpt configures a View (NewView). Options are applied in order; the
// zero set of options gives the defaults documented on each option.
type ViewOpt interface {
	apply(*cfg)
}

type cfg struct {
	now     func() time.Time
	digests bool
	waiting func(error)
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

// DigestDefinitions makes a View keep, of each budget's definition (kind
// 2), a 64-bit digest of its content instead of the definition: about 60
// bytes a budget where the definition takes about 300, for a worker of a
// million budgets, which only needs to know whether its own definitions
// are published (HasBudgetDef, and DefinitionRecords through ShowsBudget).
// BudgetDef and BudgetDefs then find no definition; ExperimentDef and the
// experiments are kept whole. Default: definitions kept whole, as status
// pages need them.
func DigestDefinitions() ViewOpt {
	return opt(func(c *cfg) { c.digests = true })
}

// Waiting sets a function NewView calls while its start waits for the
// topic's partitions to answer (a partition without a leader, a broker
// that does not know the topic yet): after about 4.5 s, then about every
// 10 s, with the newest answer (a *TopicError naming the partition; see
// ListSettled). The caller logs it, so that a worker waiting on its
// cluster says so.
func Waiting(fn func(error)) ViewOpt {
	return opt(func(c *cfg) { c.waiting = fn })
}
