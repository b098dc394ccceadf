package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/clip"
	"github.com/throttler/throttler/stats"
)

// ledgerFlags are the flags of the ledger commands.
type ledgerFlags struct {
	kf      *kafkaFlags
	topic   *string
	group   *string
	timeout *time.Duration
}

func addLedgerFlags(fs *flag.FlagSet) *ledgerFlags {
	return &ledgerFlags{
		kf:      addKafkaFlags(fs, "127.0.0.1:9092"),
		topic:   fs.String("stats-topic", "throttler.stats", "the stats `topic` (a config's topics.stats; default <group>.stats)"),
		group:   fs.String("group", config.DefaultGroup, "the workers' consumer `group`, whose committed offset of the partition is compared"),
		timeout: fs.Duration("timeout", 30*time.Second, "give up reading the topics after this `duration`"),
	}
}

// ledgerLook is what the ledger commands learn of one source.
type ledgerLook struct {
	source    string
	in        *stats.LedgerInspection
	end       int64 // the input partition's end, -1 unknown
	committed int64 // the group's committed offset, -1 none
	opts      []kgo.Opt
}

// inspect reads the source's ledger, its input partition's end and the
// group's committed offset.
func (f *ledgerFlags) inspect(ctx context.Context, e *env) (*ledgerLook, error) {
	if len(e.args) != 1 {
		return nil, &usageError{"want one SOURCE (topic/partition, as in 'events/3')"}
	}
	source := e.args[0]
	topic, part, err := stats.ParseSource(source)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("SOURCE %q: want topic/partition, as in 'events/3'", clip.String(source))}
	}
	switch {
	case *f.topic == "":
		return nil, badFlag("stats-topic", "must not be empty")
	case *f.timeout <= 0:
		return nil, badFlag("timeout", "must be positive, got %v", *f.timeout)
	}
	opts, err := f.kf.opts()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	defer cancel()
	if err := checkFatal(ctx, opts); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	look := &ledgerLook{source: source, end: -1, committed: -1, opts: opts}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("input topic %s: %w", topic, err)
	}
	if o, ok := ends.Lookup(topic, part); ok && o.Err == nil {
		look.end = o.Offset
	} else {
		return nil, fmt.Errorf("input topic %s has no partition %d", topic, part)
	}
	if *f.group != "" {
		if os, err := adm.FetchOffsets(ctx, *f.group); err == nil {
			if o, ok := os.Lookup(topic, part); ok && o.Err == nil {
				look.committed = o.At
			}
		}
	}
	if look.in, err = stats.InspectLedger(ctx, opts, *f.topic, source, look.end); err != nil {
		return nil, err
	}
	return look, nil
}

var ledgerShowCmd = &command{
	name:    "ledger show",
	args:    "SOURCE",
	summary: "describe a source's ledger on the stats topic: what a worker restores, and why it parks it",
	doc: `Reads the stats partition of SOURCE (an input or reward partition, as in
'events/3') to its end and prints what a worker restores of its ledger (its
sequence, input offset and counters), the newest record of every key of the
ledger and, for each one a worker leaves out, why: it does not decode, breaks
the limits, or names an input offset past the partition's end. A worker parks
a source with such a record (docs/operations.md, Parked partitions); 'throttler
ledger repair SOURCE' repairs it. --json prints the same as one JSON document.
Exit status 0 when it printed, 1 when the topics cannot be read, 2 for a bad
flag.`,
	setup: func(fs *flag.FlagSet) action {
		f := addLedgerFlags(fs)
		asJSON := fs.Bool("json", false, "print one JSON document")
		return func(ctx context.Context, e *env) error {
			look, err := f.inspect(ctx, e)
			if err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(e.stdout).Encode(look.doc())
			}
			look.print(e.stdout)
			return nil
		}
	},
}

// ledgerDoc is `ledger show --json`.
type ledgerDoc struct {
	Source         string          `json:"source"`
	InputEnd       int64           `json:"input_end"`
	GroupCommitted int64           `json:"group_committed"` // -1: none
	Restores       bool            `json:"restores"`        // whole: a worker runs it
	Seq            uint64          `json:"seq"`
	Offset         int64           `json:"offset"`
	Budgets        int             `json:"budgets"`
	Passed         uint64          `json:"passed"` // summed over budgets, total
	Problems       []string        `json:"problems"`
	Keys           []ledgerKeyDoc  `json:"keys"`
	Repairable     ledgerRepairDoc `json:"repair"`
}

type ledgerKeyDoc struct {
	Part        string `json:"part"`
	Index       uint32 `json:"index"`
	StatsOffset int64  `json:"stats_offset"`
	Deleted     bool   `json:"deleted,omitempty"`
	Seq         uint64 `json:"seq,omitempty"`
	InputOffset int64  `json:"input_offset"`
	Entries     int    `json:"entries"`
	Bytes       int    `json:"bytes"`
	Problem     string `json:"problem,omitempty"`
}

type ledgerRepairDoc struct {
	Seq    uint64   `json:"seq"`    // of the fold of the good records
	Offset int64    `json:"offset"` // likewise
	Lost   []string `json:"lost"`   // bad keys with no good record left
	Exact  bool     `json:"exact"`
	Why    string   `json:"why"`
}

func (l *ledgerLook) doc() ledgerDoc {
	in := l.in
	d := ledgerDoc{Source: l.source, InputEnd: l.end, GroupCommitted: l.committed, Restores: len(in.Restore.Problems) == 0,
		Seq: in.Restore.Seq, Offset: in.Restore.Offset, Budgets: len(in.Restore.Reports), Problems: []string{}, Keys: []ledgerKeyDoc{}}
	for _, r := range in.Restore.Reports {
		d.Passed += r.Total.Passed
	}
	for i := range in.Restore.Problems {
		d.Problems = append(d.Problems, clip.Error(&in.Restore.Problems[i]))
	}
	for _, k := range in.Keys {
		kd := ledgerKeyDoc{Part: k.Part.String(), Index: k.Index, StatsOffset: k.Offset, Deleted: k.Deleted, Seq: k.Seq,
			InputOffset: k.InputOffset, Entries: k.Entries, Bytes: k.Bytes, Problem: clip.Error(k.Problem)}
		d.Keys = append(d.Keys, kd)
	}
	_, exact, why := l.repairOffset()
	d.Repairable = ledgerRepairDoc{Seq: in.Repaired.Seq, Offset: in.Repaired.Offset, Lost: []string{}, Exact: exact, Why: why}
	for _, k := range in.Lost {
		d.Repairable.Lost = append(d.Repairable.Lost, fmt.Sprintf("%s %d", k.Part, k.Index))
	}
	return d
}

func (l *ledgerLook) print(w io.Writer) {
	d := l.doc()
	fmt.Fprintf(w, "source %s: input partition ends at %d; group committed offset %d (-1: none)\n", d.Source, d.InputEnd, d.GroupCommitted)
	if d.Restores {
		fmt.Fprintf(w, "a worker restores it whole: sequence %d, input offset %d, %d budgets, %d passes\n", d.Seq, d.Offset, d.Budgets, d.Passed)
	} else {
		fmt.Fprintf(w, "a worker PARKS it: %d records it cannot use\n", len(d.Problems))
		for _, p := range d.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tINDEX\tSTATS OFFSET\tSEQ\tINPUT OFFSET\tENTRIES\tBYTES\tPROBLEM")
	for _, k := range d.Keys {
		if k.Deleted {
			fmt.Fprintf(tw, "%s\t%d\t%d\t\t\t\t%d\t(tombstone)\n", k.Part, k.Index, k.StatsOffset, k.Bytes)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", k.Part, k.Index, k.StatsOffset, k.Seq, k.InputOffset, k.Entries, k.Bytes, k.Problem)
	}
	tw.Flush()
	if !d.Restores {
		fmt.Fprintf(w, "repair: %s\n", d.Repairable.Why)
	}
}

// repairOffset returns the input offset a repair writes, whether the
// repair is exact, and why.
//
// The good records' fold (InspectLedger's Repaired) is what the committed
// transactions wrote, but for the bad keys that have no good record left
// (Lost). Such a key held nothing newer when the fold is a whole ledger
// (Whole) that reaches the group's committed offset: the owner writes a
// record with the new offset at every commit, into the chain after its
// newest snapshot. Nor does a lost heartbeat, which holds no counter.
func (l *ledgerLook) repairOffset() (offset int64, exact bool, why string) {
	in := l.in
	offset = in.Repaired.Offset
	var counters []string
	for _, k := range in.Lost {
		if k.Part != stats.LedgerHeartbeat {
			counters = append(counters, fmt.Sprintf("%s %d", k.Part, k.Index))
		}
	}
	reaches := l.committed >= 0 && offset == l.committed
	switch {
	case len(counters) > 0 && !(in.Whole && reaches):
		if l.committed >= 0 {
			offset = l.committed
		}
		return offset, false, fmt.Sprintf("NOT exact: %s may have held counters and no good record of them is left (compacted away), and the good records do not form a whole ledger up to the group's offset; the repaired ledger may count less than the outputs. --force writes it with the group's offset %d", strings.Join(counters, ", "), offset)
	case len(counters) > 0:
		return offset, true, fmt.Sprintf("exact: the good records form a whole ledger up to input offset %d, the group's; %s (bad, no good record) held nothing newer", offset, strings.Join(counters, ", "))
	case l.committed >= 0 && offset < l.committed:
		// Only heartbeats are lost: they hold no counter, and the
		// group's offset is where the committed transactions stand.
		return l.committed, true, fmt.Sprintf("exact: the good records give the counters; the input offset is the group's committed %d (a lost heartbeat held the newer one)", l.committed)
	case l.committed >= 0 && offset > l.committed:
		return offset, true, fmt.Sprintf("exact: the good records give the counters and input offset %d, ahead of the group's %d (at least once, the records between are counted and skipped)", offset, l.committed)
	}
	return offset, true, fmt.Sprintf("exact: the good records give the counters and input offset %d", offset)
}

var ledgerRepairCmd = &command{
	name:    "ledger repair",
	args:    "SOURCE",
	summary: "repair the ledger of a parked source from what its owner committed",
	doc: `Repairs the ledger of SOURCE (as in 'events/3') that workers park because a
record of it is bad (see 'throttler ledger show'). It reads the whole stats
partition and, of every key of the ledger, takes the newest good record: the
good record a bad one overwrote stays in the partition until compaction
removes it, and it is what the owner committed. It writes, in one
transaction, a snapshot of those records' counters at a sequence above every
one seen, and tombstones for the bad keys. The workers start the source again
within 10 s (their ParkRetry), from the group's committed offset.

The repair is exact (the counters are what the committed transactions wrote,
so they equal the outputs) unless a bad key's good record held counters and
was compacted away; then it says which and writes only with --force (the
budgets that record counted may be under). --dry-run prints what it would
write. Run it while the source is parked (a worker that owns the source
writes nothing for it then). Exit status 0 when repaired or nothing to
repair, 1 when it cannot, 2 for a bad flag.`,
	setup: func(fs *flag.FlagSet) action {
		f := addLedgerFlags(fs)
		dry := fs.Bool("dry-run", false, "print what would be written, write nothing")
		force := fs.Bool("force", false, "write even when the repair is not exact")
		return func(ctx context.Context, e *env) error {
			look, err := f.inspect(ctx, e)
			if err != nil {
				return err
			}
			in := look.in
			_, seqErr := stats.NewLedger(*f.topic, in.Restore, 0)
			if len(in.Restore.Problems) == 0 && !errors.Is(seqErr, stats.ErrSequenceExhausted) {
				fmt.Fprintf(e.stdout, "%s: nothing to repair: a worker restores its ledger whole\n", look.source)
				return nil
			}
			offset, exact, why := look.repairOffset()
			fmt.Fprintf(e.stdout, "%s: %s\n", look.source, why)
			if !exact && !*force {
				return errors.New("not written (see above; --force writes anyway)")
			}
			recs, err := in.RepairRecords(*f.topic, offset, clock())
			if err != nil {
				return err
			}
			tombs := 0
			for _, r := range recs {
				if r.Value == nil {
					tombs++
				}
			}
			fmt.Fprintf(e.stdout, "%d records: a snapshot of %d budgets at input offset %d, %d tombstones\n",
				len(recs), len(in.Repaired.Reports), offset, tombs)
			if *dry {
				fmt.Fprintln(e.stdout, "dry run: nothing written")
				return nil
			}
			wctx, cancel := context.WithTimeout(ctx, *f.timeout)
			defer cancel()
			if err := writeTxn(wctx, look.opts, *f.topic, recs); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "written; the workers start the source again within 10 s")
			return nil
		}
	},
}

// writeTxn produces recs to the stats topic in one transaction.
func writeTxn(ctx context.Context, opts []kgo.Opt, topic string, recs []*kgo.Record) error {
	cl, err := kgo.NewClient(append(slices.Clone(opts),
		kgo.TransactionalID("throttler-ledger-repair"),
		kgo.RecordPartitioner(stats.LedgerPartitioner(nil, topic)))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	perr := cl.ProduceSync(ctx, recs...).FirstErr()
	end := kgo.TryCommit
	if perr != nil {
		end = kgo.TryAbort
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		return errors.Join(perr, err)
	}
	return perr
}
