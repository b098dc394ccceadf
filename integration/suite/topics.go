package suite

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/stats"
)

// ReadTopics reads every record of topics (read_committed) from the start
// up to the end offsets they have when it starts, and returns the data
// records by topic. A topic that does not exist reads as empty. It fails
// the test when ctx ends first (an open transaction never ending, say).
//
// A partition is read once a record (data or control) at its end-1 was
// seen, or, when no transaction is open in it (its last stable offset is
// its end), once nothing more came for quietAfter: a kfake restarted after
// a crash aborts the transactions that were open without writing abort
// markers, so a partition may end in aborted records a reader never sees.
func ReadTopics(ctx context.Context, t *testing.T, brokers string, topics ...string) map[string][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]*kgo.Record{}
	if topics = existing(ctx, t, kadm.NewClient(cl), topics); len(topics) == 0 {
		return out
	}
	ends := listEnds(ctx, t, kadm.NewClient(cl), topics)
	lsos, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("list last stable offsets of %v: %v", topics, err)
	}
	pending := map[string]map[int32]int64{}
	var nonEmpty []string
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset == 0 {
			return
		}
		if pending[o.Topic] == nil {
			pending[o.Topic] = map[int32]int64{}
			nonEmpty = append(nonEmpty, o.Topic)
		}
		pending[o.Topic][o.Partition] = o.Offset
	})
	if len(nonEmpty) == 0 {
		return out
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(brokers)...), kgo.ConsumeTopics(nonEmpty...),
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
		pctx, cancel := context.WithTimeout(ctx, QuietAfter)
		fs := rd.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %v: %d partitions not read to their end before the deadline", topics, left)
		}
		if fs.NumRecords() > 0 {
			lastNews = time.Now()
		} else if time.Since(lastNews) >= QuietAfter {
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

// existing returns the topics of topics that exist. A topic is taken for
// absent only when three listings, half a second apart, all say so: a
// broker under load once answered a listing of the end offsets of an
// input topic of 74,000 records without it, and the run read as having no
// input.
func existing(ctx context.Context, t *testing.T, adm *kadm.Client, topics []string) []string {
	t.Helper()
	found := map[string]bool{}
	for attempt := 0; attempt < 3 && len(found) < len(topics); attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("list topics %v: %v", topics, ctx.Err())
			case <-time.After(500 * time.Millisecond):
			}
		}
		td, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("list topics %v: %v", topics, err)
			}
			attempt-- // no answer: ask again, until ctx ends
			continue
		}
		for _, d := range td {
			if !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				found[d.Topic] = true
			}
		}
	}
	var out []string
	for _, tp := range topics {
		if found[tp] {
			out = append(out, tp)
		}
	}
	return out
}

// listEnds lists the end offsets of topics, which exist, asking again
// while a partition answers with an error or a topic is missing from the
// answer (a broker under load, a leader moving) until ctx ends. A
// partition's error taken for an empty partition read a whole output
// topic as empty.
func listEnds(ctx context.Context, t *testing.T, adm *kadm.Client, topics []string) kadm.ListedOffsets {
	t.Helper()
	for {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		var failed error
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil && failed == nil {
					failed = fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err)
				}
			})
			for _, tp := range topics {
				if _, ok := ends[tp]; !ok && failed == nil {
					failed = fmt.Errorf("%s: not in the answer", tp)
				}
			}
			if failed == nil {
				return ends
			}
		} else {
			failed = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("list end offsets of %v: %v", topics, failed)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// QuietAfter is how long readTopics waits for more records of a partition
// with no open transaction before it takes it as read.
const QuietAfter = 3 * time.Second

// CountedPasses sums the passes of budget in the stats topic, as a View
// folds it (what the workers pace from), and in the committed ledgers of
// the input partitions, as a new owner restores them (stats.LoadLedgers).
func CountedPasses(ctx context.Context, t *testing.T, brokers, statsTopic, input string, partitions int32, budget string) (inStats, inLedgers uint64) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(kafkabroker.Seeds(brokers)...)}
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
	for _, st := range LoadLedgers(ctx, t, opts, statsTopic, input, partitions) {
		if r, ok := st.Report(budget); ok {
			inLedgers += r.Total.Passed
		}
	}
	return inStats, inLedgers
}

// LoadLedgers loads the committed ledgers of the partitions of input.
func LoadLedgers(ctx context.Context, t *testing.T, opts []kgo.Opt, statsTopic, input string, partitions int32) map[string]stats.LedgerState {
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

// Tally is where the input ids ended up.
type Tally struct {
	Inputs     int
	ByTopic    map[string]int // records per output topic
	Passes     int            // records that passed (decision pass) for the budget
	Lost       []string       // input ids found in no output topic
	Duplicates int            // output records beyond the first of an id
	Unknown    int            // output records whose id is not an input id
}

// Account matches the ids of the input records with those of the records
// of the output topics. Records are matched by the JSON field idPath of
// their value.
func Account(inputs []*kgo.Record, outputs map[string][]*kgo.Record, idPath, budget string) Tally {
	seen := make(map[string]int, len(inputs))
	for _, r := range inputs {
		seen[JsonField(r.Value, idPath)] = 0
	}
	tl := Tally{Inputs: len(seen), ByTopic: map[string]int{}}
	for topic, rs := range outputs {
		tl.ByTopic[topic] = len(rs)
		for _, r := range rs {
			id := JsonField(r.Value, idPath)
			n, ok := seen[id]
			if !ok {
				tl.Unknown++
				continue
			}
			seen[id] = n + 1
			if n > 0 {
				tl.Duplicates++
			}
			if passOf(r, budget) {
				tl.Passes++
			}
		}
	}
	for id, n := range seen {
		if n == 0 {
			tl.Lost = append(tl.Lost, id)
		}
	}
	return tl
}

// passOf reports whether output record r is a pass of budget (its
// decision and budget headers).
func passOf(r *kgo.Record, budget string) bool {
	d, _ := pipeline.HeaderValue(r, pipeline.HeaderDecision)
	b, _ := pipeline.HeaderValue(r, pipeline.HeaderBudget)
	return d == pipeline.DecisionPass && b == budget
}

func (tl Tally) String() string {
	return fmt.Sprintf("inputs %d, outputs %v, passes %d, duplicates %d, lost %d, unknown %d",
		tl.Inputs, tl.ByTopic, tl.Passes, tl.Duplicates, len(tl.Lost), tl.Unknown)
}

// WaitFor polls cond every 500ms until it is true or timeout passes.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	return testwait.Poll(timeout, 500*time.Millisecond, cond)
}

// FinishExactlyOnce waits for the exactly-once group (groupConfig) to
// consume input to its end, stops its workers, which must all be
// running, and checks the outputs: every input id in exactly one output
// topic, the budget overspent by at most 0.5%, and the passes counted in
// the stats topic and in the ledgers equal to those in the output topics.
func FinishExactlyOnce(t *testing.T, addr, group, input string, target, partitions int, workers ...*Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, closeAdm := Admin(t, addr)
	defer closeAdm()
	if !WaitFor(60*time.Second, func() bool { return CaughtUp(ctx, adm, group, input) }) {
		t.Fatalf("the group did not consume the input to its end: %s", Stall(ctx, adm, group, input, GroupTopics(group)...))
	}
	// Real time: one more stats interval (2 s) of idle workers, whose
	// reports are published on their own timers in other processes.
	time.Sleep(2500 * time.Millisecond)
	for _, w := range workers {
		if w.Exited() {
			t.Errorf("%s exited during the run: %v", w.Name, w.Werr)
			continue
		}
		if err := w.Stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.Name, err)
		}
	}
	inputs := ReadTopics(ctx, t, addr, input)[input]
	tl := Account(inputs, ReadTopics(ctx, t, addr, GroupTopics(group)...), "id", "campaign")
	over := max(float64(tl.Passes-target)/float64(target), 0)
	t.Logf("%v; delivered %d of %d, overspend %.3f%%", tl, tl.Passes, target, 100*over)
	if len(tl.Lost) > 0 || tl.Duplicates > 0 || tl.Unknown > 0 {
		t.Errorf("%d ids lost (e.g. %v), %d duplicated, %d unknown", len(tl.Lost), tl.Lost[:min(5, len(tl.Lost))], tl.Duplicates, tl.Unknown)
	}
	if over > 0.005 {
		t.Errorf("%d passes for a target of %d, overspent by %.3f%% (bound 0.5%%)", tl.Passes, target, 100*over)
		t.Log(PassTimeline(ctx, t, addr, group+".stats", "campaign"))
	}
	if tl.Passes == 0 {
		t.Errorf("no pass: the run exercised nothing")
	}
	inStats, inLedgers := CountedPasses(ctx, t, addr, group+".stats", input, int32(partitions), "campaign")
	t.Logf("passes in the stats topic %d, in the ledgers %d, in the output topics %d", inStats, inLedgers, tl.Passes)
	if inStats != uint64(tl.Passes) || inLedgers != uint64(tl.Passes) {
		t.Errorf("counted passes (stats %d, ledgers %d) differ from the %d passes in the output topics", inStats, inLedgers, tl.Passes)
	}
}
