package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// readTopics reads every record of topics (read_committed) from the start
// up to the end offsets they have when it starts, and returns the data
// records by topic. A topic that does not exist reads as empty. It fails
// the test when ctx ends first (an open transaction never ending, say).
//
// A partition is read once a record (data or control) at its end-1 was
// seen, or, when no transaction is open in it (its last stable offset is
// its end), once nothing more came for quietAfter: a kfake restarted after
// a crash aborts the transactions that were open without writing abort
// markers, so a partition may end in aborted records a reader never sees.
func readTopics(ctx context.Context, t *testing.T, brokers string, topics ...string) map[string][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("list end offsets of %v: %v", topics, err)
	}
	lsos, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("list last stable offsets of %v: %v", topics, err)
	}
	pending := map[string]map[int32]int64{}
	var existing []string
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset == 0 {
			return
		}
		if pending[o.Topic] == nil {
			pending[o.Topic] = map[int32]int64{}
			existing = append(existing, o.Topic)
		}
		pending[o.Topic][o.Partition] = o.Offset
	})
	out := map[string][]*kgo.Record{}
	if len(existing) == 0 {
		return out
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(existing...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	left := 0
	for _, ps := range pending {
		left += len(ps)
	}
	lastNews := time.Now()
	for left > 0 {
		pctx, cancel := context.WithTimeout(ctx, quietAfter)
		fs := rd.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %v: %d partitions not read to their end before the deadline", topics, left)
		}
		if fs.NumRecords() > 0 {
			lastNews = time.Now()
		} else if time.Since(lastNews) >= quietAfter {
			for topic, ps := range pending {
				for p, end := range ps {
					if lso, ok := lsos.Lookup(topic, p); ok && lso.Err == nil && lso.Offset >= end {
						delete(ps, p)
						left--
					}
				}
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := pending[r.Topic][r.Partition]; ok && r.Offset >= end-1 {
				delete(pending[r.Topic], r.Partition)
				left--
			}
			if !r.Attrs.IsControl() {
				out[r.Topic] = append(out[r.Topic], r)
			}
		})
	}
	return out
}

// quietAfter is how long readTopics waits for more records of a partition
// with no open transaction before it takes it as read.
const quietAfter = 3 * time.Second

// countedPasses sums the passes of budget in the stats topic, as a View
// folds it (what the workers pace from), and in the committed ledgers of
// the input partitions, as a new owner restores them (stats.LoadLedgers).
func countedPasses(ctx context.Context, t *testing.T, brokers, statsTopic, input string, partitions int32, budget string) (inStats, inLedgers uint64) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers)}
	view, err := stats.NewView(ctx, statsTopic, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if err := view.WaitCaughtUp(ctx); err != nil {
		t.Fatalf("stats view of %s: %v", statsTopic, err)
	}
	for _, r := range view.View(budget, nil) {
		inStats += r.Total.Passed
	}
	for _, st := range loadLedgers(ctx, t, opts, statsTopic, input, partitions) {
		if r, ok := st.Report(budget); ok {
			inLedgers += r.Total.Passed
		}
	}
	return inStats, inLedgers
}

// loadLedgers loads the committed ledgers of the partitions of input.
func loadLedgers(ctx context.Context, t *testing.T, opts []kgo.Opt, statsTopic, input string, partitions int32) map[string]stats.LedgerState {
	t.Helper()
	var srcs []string
	for p := range partitions {
		srcs = append(srcs, stats.SourceName(input, p))
	}
	states, err := stats.LoadLedgers(ctx, opts, statsTopic, srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// tally is where the input ids ended up.
type tally struct {
	inputs     int
	byTopic    map[string]int // records per output topic
	passes     int            // records that passed (decision pass) for the budget
	lost       []string       // input ids found in no output topic
	duplicates int            // output records beyond the first of an id
	unknown    int            // output records whose id is not an input id
}

// account matches the ids of the input records with those of the records
// of the output topics. Records are matched by the JSON field idPath of
// their value.
func account(inputs []*kgo.Record, outputs map[string][]*kgo.Record, idPath, budget string) tally {
	seen := make(map[string]int, len(inputs))
	for _, r := range inputs {
		seen[jsonField(r.Value, idPath)] = 0
	}
	tl := tally{inputs: len(seen), byTopic: map[string]int{}}
	for topic, rs := range outputs {
		tl.byTopic[topic] = len(rs)
		for _, r := range rs {
			id := jsonField(r.Value, idPath)
			n, ok := seen[id]
			if !ok {
				tl.unknown++
				continue
			}
			seen[id] = n + 1
			if n > 0 {
				tl.duplicates++
			}
			d, _ := pipeline.HeaderValue(r, pipeline.HeaderDecision)
			b, _ := pipeline.HeaderValue(r, pipeline.HeaderBudget)
			if d == pipeline.DecisionPass && b == budget {
				tl.passes++
			}
		}
	}
	for id, n := range seen {
		if n == 0 {
			tl.lost = append(tl.lost, id)
		}
	}
	return tl
}

func (tl tally) String() string {
	return fmt.Sprintf("inputs %d, outputs %v, passes %d, duplicates %d, lost %d, unknown %d",
		tl.inputs, tl.byTopic, tl.passes, tl.duplicates, len(tl.lost), tl.unknown)
}

// waitFor polls cond every 500ms until it is true or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	return testwait.Poll(timeout, 500*time.Millisecond, cond)
}

// finishExactlyOnce waits for the exactly-once group (groupConfig) to
// consume input to its end, stops its workers, which must all be
// running, and checks the outputs: every input id in exactly one output
// topic, the budget overspent by at most 0.5%, and the passes counted in
// the stats topic and in the ledgers equal to those in the output topics.
func finishExactlyOnce(t *testing.T, addr, group, input string, target, partitions int, workers ...*proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, closeAdm := admin(t, addr)
	defer closeAdm()
	if !waitFor(60*time.Second, func() bool { return caughtUp(ctx, adm, group, input) }) {
		t.Fatal("the group did not consume the input to its end")
	}
	// Real time: one more stats interval (2 s) of idle workers, whose
	// reports are published on their own timers in other processes.
	time.Sleep(2500 * time.Millisecond)
	for _, w := range workers {
		if w.exited() {
			t.Errorf("%s exited during the run: %v", w.name, w.werr)
			continue
		}
		if err := w.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.name, err)
		}
	}
	inputs := readTopics(ctx, t, addr, input)[input]
	tl := account(inputs, readTopics(ctx, t, addr, groupTopics(group)...), "id", "campaign")
	over := max(float64(tl.passes-target)/float64(target), 0)
	t.Logf("%v; delivered %d of %d, overspend %.3f%%", tl, tl.passes, target, 100*over)
	if len(tl.lost) > 0 || tl.duplicates > 0 || tl.unknown > 0 {
		t.Errorf("%d ids lost (e.g. %v), %d duplicated, %d unknown", len(tl.lost), tl.lost[:min(5, len(tl.lost))], tl.duplicates, tl.unknown)
	}
	if over > 0.005 {
		t.Errorf("%d passes for a target of %d, overspent by %.3f%% (bound 0.5%%)", tl.passes, target, 100*over)
	}
	if tl.passes == 0 {
		t.Errorf("no pass: the run exercised nothing")
	}
	inStats, inLedgers := countedPasses(ctx, t, addr, group+".stats", input, int32(partitions), "campaign")
	t.Logf("passes in the stats topic %d, in the ledgers %d, in the output topics %d", inStats, inLedgers, tl.passes)
	if inStats != uint64(tl.passes) || inLedgers != uint64(tl.passes) {
		t.Errorf("counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", inStats, inLedgers, tl.passes)
	}
}
