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
//     increments), and entries dropped (a deleted budget);
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
// # Intended use by the consumer
//
//	states, _ := stats.LoadLedgers(ctx, clientOpts, topic, sources...)   // on assignment
//	l, _ := stats.NewLedger(topic, states[src], view.Seq(src))
//	tree.Open(src, now, l.Report)                                        // lanes restore committed counters
//	recs, _ := l.Records(stats.Changes{Reports: changed}, offset, now)   // at every commit, every owned source
//	// produce recs in the transaction; then l.Committed(), or l.Rollback() after an abort
//
// An idle source costs nothing until Ledger.Due says its heartbeat is due.
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
//	kind 1  budget x source report, flow.Report      encoding.go   value 1.1
//	kind 2  budget definition, BudgetDef              kinds.go      value 1.1
//	kind 3  variant counts of one source, experiment  kinds.go      value 1.0
//	kind 4  experiment definition, ExperimentDef      kinds.go      value 1.0
//	kind 5  one record of a source's ledger           ledger_encoding.go  value 1.1
//
// Kinds 1 and 3 are what workers publish until the consumer switches to
// the ledger; where a source has both, a View shows the newer (by
// instant), so a source may move between old and new workers during an
// upgrade or a rollback. Old readers skip kind 5 as a kind they do not
// know. The checkpoint topic (checkpoint.go,
// LoadCheckpoint) is replaced by the ledger and goes with them: nothing of
// the ledger depends on it.
//
// # Cost model
//
// B budgets, P sources (input and reward partitions), W workers, E
// events/s, c commits/s per worker, a the (budget, source) pairs that
// change per commit on a source, N the (budget, source) pairs that count
// something (N <= B x P; with mostly idle budgets N is close to the
// active pairs), k the snapshot factor (2), h the heartbeat interval
// (1 s), e the bytes of an entry (about 20 + the budget name: 35-40 B
// for "campaign/000123"), S_s = e x n_s the snapshot of a source with n_s
// entries.
//
//   - Stats topic, bytes/s: the deltas, sum over commits and touched
//     sources of (about 35 + a x e), times at most (1 + 1/k) for the
//     snapshots; plus a 26 B heartbeat per idle source per h, and
//     definitions on change. It grows with the changed pairs, not with
//     B x P.
//   - Records/s: one delta per commit and touched source (a x e fits one
//     64 KiB record up to about 1,600 changed entries), plus S_s/64 KiB
//     chunks every k x S_s of deltas, plus P_idle/h heartbeats.
//   - Worker memory: the View, about 190 B per non-zero pair (N), plus
//     the writers, about 180-270 B per non-zero pair of the owned sources,
//     plus the definitions (kind 2 and 4) the View holds, per budget.
//   - Catch-up of a starting worker: the live keys of the topic, at most
//     about (1 + 2k) x S_s per source (one snapshot, the current chain,
//     the rest of the previous one) plus the definitions; folded at about
//     0.4 us per entry. A partition's restore reads the ledgers of that
//     partition's sources and the definitions that hash to it.
//
// Measured (go test ./stats -run XXX -bench 'Ledger|View' -benchmem; 2
// cores shared with other work, kfake in the same process; bytes and
// records are deterministic, times vary with the load): one source, 10
// changed budgets per commit, 10 commits/s and 1 sync/s: the ledger writes
// 618-628 B and 1.0 record per commit (deltas of about 400 B, and
// snapshots), 6.2 KB/s and 10 records/s, at 1k, 10k and 100k budgets,
// where today's checkpoint and kind-1 reports write 637 KB/s and 1,010
// records/s at 1k, 63.7 MB/s and 100,010 records/s at 100k (its
// checkpoint record alone is 5.6 MB). A View catching up over a compacted
// topic of 100k budgets x 48 sources with 5% non-zero (240,000 pairs,
// 11.6 MB in 9,744 records) took 0.32 s at a load average of 2.2 (0.49 s
// at 6.3), against 0.42 s (0.92 s) for today's 240,000 kind-1 records
// (18.7 MB). View(budget) does not allocate and costs O(sources of the
// budget): 0.35 us for a budget with 48 sources at a load of 3.3 (up to
// 1.1 us at 7), 20-50 ns for one with a single source.
//
// # Errors and metrics
//
// The package does not log. It returns errors (sentinels for errors.Is,
// struct errors carrying context) and exposes counters (View.Stats,
// View.Age, Exchange.Produced/Failed) for the caller's metrics.
package stats
