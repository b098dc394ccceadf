package schemaregistry

import "time"

// The options below tune a Source's waits and bounds for the tests, in
// virtual time; a worker runs with their defaults.

// Wait is how long Schema waits for a fetch (a partition waits with it)
// before answering that the schema is not available yet; the fetch goes
// on. Default DefaultWait (2s).
func Wait(d time.Duration) Opt { return optFunc(func(c *cfg) { c.wait = d }) }

// Backoff sets the wait after a failed fetch of an id before the next,
// doubling from min to max. Default DefaultMinBackoff (100ms) to
// DefaultMaxBackoff (2s).
func Backoff(min, max time.Duration) Opt {
	return optFunc(func(c *cfg) { c.minBackoff, c.maxBackoff = min, max })
}

// UnknownFor is how long the registry's answer that it has no schema of
// an id is believed before it is asked again (meanwhile records of the id
// are dead-lettered, reason unknown_schema). Default DefaultUnknownFor
// (10s).
func UnknownFor(d time.Duration) Opt { return optFunc(func(c *cfg) { c.unknownFor = d }) }

// MaxIDs bounds the schema ids the source keeps: what it fetched, and the
// registry's answers that it has no such id. The least recently used id
// goes first (a schema in use is fetched again if it went). Default
// DefaultMaxIDs (1024).
func MaxIDs(n int) Opt { return optFunc(func(c *cfg) { c.maxIDs = n }) }

// Lookups bounds the fetches from the registry: perSecond on average,
// burst at once. Records whose ids wait for a fetch are held (their
// partition waits), as when the registry is slow: a stream of records
// with distinct unknown ids makes at most perSecond requests a second,
// not one per id at once. Default DefaultLookups (20) and
// DefaultLookupBurst (50).
func Lookups(perSecond float64, burst int) Opt {
	return optFunc(func(c *cfg) { c.lookups, c.lookupBurst = perSecond, burst })
}

// WithClock sets the clock of backoffs. Default time.Now.
func WithClock(now func() time.Time) Opt { return optFunc(func(c *cfg) { c.now = now }) }
