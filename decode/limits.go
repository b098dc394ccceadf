package decode

// MaxKeyAndHeaderBytes bounds the key and headers of an event (names and
// values together): an event with more is a bad record (ReasonTooLarge).
// With DefaultMaxBytes for the value it keeps every output record (which
// carries the event's key and headers, and the worker's) under the 1 MiB
// of ProducerLimits and Kafka's default message.max.bytes: a record the
// broker refuses would abort its transaction, and every retry of it.
const MaxKeyAndHeaderBytes = 32 << 10
