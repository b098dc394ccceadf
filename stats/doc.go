// Package stats is the counter exchange of throttler over Kafka: the
// compacted stats topic through which workers share the committed
// counters of the partitions they own, restore a partition they take
// over, and learn the budgets' and experiments' definitions.
//
// # Sources and ledgers
//
// A source is one partition of an input or reward topic, named
// "topic/partition" (SourceName). Its owner keeps, per source, a ledger:
// the source's cumulative counters per budget (the body of a flow.Report:
// Since, Total, Period, InPeriod, Cut) and per experiment (variant counts),
// with the input offset they belong to. The ledger is written at every
// commit, inside the transaction that commits the outputs and the input
// offsets (Ledger.Records), into stats partition p for source "t/p"
// (LedgerPartitioner), so the stats topic needs at least as many
// partitions as the largest input topic (StatsTopic). A worker taking a
// partition restores its ledger by reading one stats partition
// (LoadLedgers); every worker follows all partitions (View).
//
// A ledger is a set of records under keys (kind 5, source, part, number):
//
//   - a snapshot: every entry of the source, in chunks S_0..S_n-1 of at
//     most WithRecordBytes (64 KiB) each, whatever the number of entries;
//   - a chain of deltas D_0, D_1, ... since that snapshot, each holding
//     only the entries that changed at one commit (cumulative values, not
//     increments), and entries dropped (a deleted budget, or counters
//     of an ended period that the owner forgets, see below);
//   - a heartbeat H: written when nothing changed but the offset moved,
//     or when the source wrote nothing for WithHeartbeat (1 s); it vouches
//     that the entries are unchanged as of its instant.
//
// Every record carries a sequence number that only grows per source (the
// records of one commit share it), the commit's instant and the source's
// offset. A new snapshot replaces the chain once the chain's bytes would
// pass k times the snapshot's (WithSnapshotFactor, k = 2) and at least
// one record bound; it tombstones the chunk keys it no longer uses and the
// delta keys beyond the chain it ends (the keys of that chain are
// overwritten by the next one). A new owner continues the sequence from
// max(restored sequence, the sequence its View saw) + 1 (NewLedger).
//
// Readers fold records (ledger_fold.go): per (source, entry) the value of
// the highest sequence wins; per source, the newest record gives the
// offset and the vouched instant, and once every chunk of a snapshot has
// been seen its sequence becomes the floor, below which entries are
// dropped. So neither the order of the records nor what compaction leaves
// of a partition changes the outcome: the fold of a compacted partition is
// the fold of the whole of it, and a source moved between two writers is
// counted once. Under read_committed an aborted transaction's records are
// never seen; the writer offers their changes again (Ledger.Aborted) or
// forgets them when the caller rolls its counters back (Ledger.Rollback).
//
// # Use by the consumer
//
//	states, _ := stats.LoadLedgers(ctx, clientOpts, topic, sources...)   // on assignment
//	l, _ := stats.NewLedger(topic, states[src], view.Seq(src))
//	tree.Open(src, now, l.Report)                                        // lanes restore committed counters
//	recs, _ := l.Records(stats.Changes{Reports: changed}, offset, now)   // at every commit, every owned source
//	// produce recs in the transaction; then l.Committed(), or l.Rollback() after an abort
//
// The consumer (consumer/ledger.go) calls Records at every commit for each
// partition that processed records (Changes: the lanes flow.Source.Changed
// lists, the experiments whose variant counts moved, the budgets deleted),
// and at the commits of a sync for each idle one whose heartbeat is Due (it
// sets WithHeartbeat to half the sync interval, so that an idle source
// writes one heartbeat per sync interval). A source without a ledger
// starts from zero; its first Records writes a snapshot. Every ten sync
// intervals, at a sync, it also drops the budgets flow.Source.Forgettable
// names among the ledger's entries (Ledger.Counted): period budgets whose
// counters are of a period that ended, with no lane open on the source.
// So a ledger, and every View, holds the pairs that count in the current
// period (and those of window, reward and delay budgets), not every pair
// that ever counted.
//
// # The View
//
// A View follows the whole topic with a group-less read_committed consumer
// and keeps, indexed by budget, only the (budget, source) entries that
// count something. View(budget) returns one report per source of the
// budget with At = the source's newest vouched instant (SourceInfo.At), so
// a controller tells an idle source (recent At, unchanged counters) from a
// stale one (At falling behind: the owner is silent). Totals and
// EachBudget give cluster totals per budget (sorted, pageable) at
// O(sources of the budget) each, for status and a dashboard.
//
// # Definitions
//
// Budget definitions (kind 2, BudgetDef) and experiment definitions (kind
// 4, ExperimentDef) keep key hashing and are published on change only:
// DefinitionRecords returns the records of the definitions a worker runs
// that the View does not already show identically.
//
// # Record kinds and encodings
//
// The first byte of a key is the record's kind (kinds.go); values start
// with a major and a minor version byte. A decoder rejects another major
// (ErrUnknownVersion) and skips fields, entry types and parts a newer
// minor adds; within the minor it knows, trailing bytes are corrupt
// (ErrCorrupt). Readers skip (and count) what they cannot decode; no
// record of any kind makes them fail, except a requested source's ledger
// in LoadLedgers, which must not restore less than was committed.
//
//	kind 2  budget definition, BudgetDef              kinds.go            value 1.1
//	kind 4  experiment definition, ExperimentDef      kinds.go            value 1.0
//	kind 5  one record of a source's ledger           ledger_encoding.go  value 1.1
//	kind 6  a worker's status, WorkerStatus           workerstatus.go
//
// Kinds 1 and 3 are reserved and never written; readers skip them like
// any kind they do not know.
//
// # Cost model
//
// B budgets, P sources (input and reward partitions), W workers, E
// events/s, c commits/s per worker, a the (budget, source) pairs that
// change per commit on a source, N the (budget, source) pairs that count
// something (N <= B x P; the pairs of window, reward and delay budgets
// that ever counted, and those of period budgets that counted in the
// current period or the last one), k the snapshot factor (2), h the
// heartbeat interval (1 s), e the bytes of an entry (about 20 + the
// budget name: 35-40 B for "campaign/000123"), S_s = e x n_s the snapshot
// of a source with n_s entries.
//
//   - Stats topic, bytes/s: the deltas, sum over commits and touched
//     sources of (about 35 + a x e), times at most (1 + 1/k) for the
//     snapshots; plus a 26 B heartbeat per idle source per h, and
//     definitions on change. It grows with the changed pairs, not with
//     B x P.
//   - Records/s: one delta per commit and touched source (a x e fits one
//     64 KiB record up to about 1,600 changed entries), plus S_s/64 KiB
//     chunks every k x S_s of deltas, plus P_idle/h heartbeats.
//   - Worker memory: the View, about 220 B per non-zero pair (N), plus
//     the writers, about 180-270 B per non-zero pair of the owned sources,
//     plus, per budget, the digest of its definition (a worker's View,
//     DigestDefinitions: about 90 B with its name, against about 310 B
//     for the whole definition a status page's View holds; go test
//     ./stats -bench DefinitionMemory).
//   - Catch-up of a starting worker: the live keys of the topic, at most
//     about (1 + 2k) x S_s per source (one snapshot, the current chain,
//     the rest of the previous one) plus the definitions; folded at about
//     0.4 us per entry. A partition's restore reads the ledgers of that
//     partition's sources and the definitions that hash to it.
//
// With the consumer (commits every 100 ms, c = 10 per second per worker,
// when its partitions have traffic; a sync every second): records/s =
// c x (busy sources of the worker), summed over workers, plus one
// heartbeat per idle source per sync interval, whatever B; so at most
// 10 x P + P records/s. Bytes per delta: about 60 + a x e, where a, the
// budgets a source changed in 100 ms, is at most the events it processed
// in them. Definitions: one record (about 100 B) per budget the topic
// lacks, once, when the first worker starts (and one per change), in
// batches of 1,000 per commit.
//
// Measured figures (bytes and records per commit, catch-up, View(budget),
// and the end-to-end run of `throttler scale`) are in docs/results.md;
// `go test ./stats -run XXX -bench 'Ledger|View' -benchmem` gives the
// package's own.
//
// # Errors and metrics
//
// The package does not log. It returns errors (sentinels for errors.Is,
// struct errors carrying context) and exposes counters (View.Stats,
// View.Age) for the caller's metrics.
package stats
