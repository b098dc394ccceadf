// Package bench measures the worker pipeline against what a user would
// run instead, on the same broker and the same records: `throttler
// bench`.
//
// The sides of a round, in this order in the first: a raw franz-go consume→produce
// passthrough; with Config.DecodeReference the decode reference, the
// passthrough that decodes every record with the pipeline's decoder (a
// poll's records in parallel, on GOMAXPROCS goroutines) before it copies
// it; the pipeline; with Config.OneBudgetReference the pipeline with one
// budget on an input of its own; with Config.StreamsReference a Kafka
// Streams application (the streams directory: parse the JSON value, send
// it to the passed or the rejected topic by a field, add a header), built
// once with Maven and run in one JVM for every round, after unmeasured
// warm-up passes (Config.StreamsWarmup). Rounds repeat the sides in turn,
// round i starting at side i, so that every side is measured across the
// same stretch of time on a loaded machine and after every other; each
// side's figures are the medians of its rounds.
//
// The Go sides share the client settings, the delivery mode (a
// kgo.GroupTransactSession with read_committed for exactly-once; flush
// then commit offsets for at-least-once) and the commit cadence (every
// consumer.DefaultCommitInterval or consumer.DefaultCommitRecords polled
// records, polls of consumer.DefaultMaxPollRecords); the Streams reference
// runs exactly_once_v2 (at_least_once for at-least-once), a commit
// interval of 100 ms and one stream thread per core. Each side's round
// has a fresh consumer group and fresh output topics, named under a
// prefix of the run's own so that runs on one broker never meet, and
// deleted after the round. A round's rate is measured the same way on
// every side, by an observer that polls the group's committed offsets:
// records committed after the group's first commit, over the time from
// that commit to the commit of the last record; the CPU of the side's
// process (the bench's own for the Go sides, the JVM's for Streams) is
// read at the same two instants. Group joining and start-up (a JVM's
// too) are thereby left out of every side.
//
// The broker is an embedded kfake in the bench's process by default, so
// that its CPU counts in the Go sides'; with Config.Brokers it is a broker
// in another process (Apache Kafka, or `throttler broker`) and the CPU
// figures are the worker side's alone.
//
// The pipeline's configuration: events from internal/tools/loadgen in
// Config.Format (Avro and Protobuf framed for a schema registry in the
// process, whose schema the worker fetches once; the passthrough copies the
// same bytes), fields budget=campaign, key=user, id=id, time=ts; Budgets
// unscored window budgets (one, "a", by default; else a loadgen spread
// "b-0…" drawn by Zipf rank with exponent Skew, or uniformly with Skew 0),
// each paced to pass about half of its events at the expected rate (see
// newPipeline); rejected events go to a rejected topic (unless
// DropRejected), so that the pipeline, like the passthrough, produces a
// record for every input record: the fair comparison, and the default; no
// experiments; a sync interval of Config.SyncInterval (100ms by default).
package bench
