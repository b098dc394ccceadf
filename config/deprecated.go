package config

// Deprecated returns the settings of the config file that are deprecated,
// each with its path, what it does now and its line: they are accepted
// (Validate does not count them as problems), and `throttler validate` and
// `throttler run` print them. A Config built in code has none.
func (c *Config) Deprecated() []Problem {
	var out []Problem
	if line, ok := c.lines["topics.checkpoints"]; ok {
		out = append(out, Problem{Path: "topics.checkpoints", Line: line, Reason: "deprecated and no longer written: " +
			"the stats topic now carries each partition's counters (its ledger). The checkpoint topic is only read, " +
			"once, for a partition that has no ledger yet, to carry its counters over from a version before the ledger; " +
			"remove this line, and delete the topic once every partition has committed under this version"})
	}
	return out
}
