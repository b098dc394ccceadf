package broker

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionRuns checks that CompactionInterval makes the broker
// compact on its own: an overwritten key disappears without Compact.
func TestCompactionRuns(t *testing.T) {
	b := start(t, CompactionInterval(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	compact := "compact"
	if err := EnsureTopicsOpts(ctx, []kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, 1, map[string]*string{"cleanup.policy": &compact}, "state"); err != nil {
		t.Fatal(err)
	}
	cl := client(t, b)
	// Separate batches: the newest batch of a partition is never compacted.
	for _, kv := range [][2]string{{"k", "old"}, {"k", "new"}, {"other", "x"}} {
		r := &kgo.Record{Topic: "state", Key: []byte(kv[0]), Value: []byte(kv[1])}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var values []string
	for {
		values = valuesOf(stateRecords(ctx, t, b.Addrs(), kgo.ReadUncommitted()))
		if len(values) == 2 && values[0] == "new" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no compaction before the deadline: %q", values)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// openOverwrite writes, to the one-partition compacted topic "state" of
// the broker at addrs, "k"="committed", then "k"="open" in a transaction it
// leaves open, then "other"="x" (so that the open batch is not the
// partition's newest, which kfake never compacts). It returns the
// transactional client, to end the transaction with.
func openOverwrite(ctx context.Context, t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	compact := "compact"
	if err := EnsureTopicsOpts(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, 1, map[string]*string{"cleanup.policy": &compact}, "state"); err != nil {
		t.Fatal(err)
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID("overwriter"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	put := func(cl *kgo.Client, k, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	put(plain, "k", "committed")
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	put(txn, "k", "open")
	put(plain, "other", "x")
	return txn
}

// stateRecords returns the data records of "state" a reader at isolation
// level iso sees, reading to the current end.
func stateRecords(ctx context.Context, t *testing.T, addrs []string, iso kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "state")
	if err != nil {
		t.Fatal(err)
	}
	end := ends["state"][0].Offset
	var recs []*kgo.Record
	for last := int64(-1); last+1 < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading state: %v (at %d of %d)", err, last+1, end)
		}
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
		})
	}
	return recs
}

// valuesOf returns the values of recs.
func valuesOf(recs []*kgo.Record) []string {
	values := make([]string, 0, len(recs))
	for _, r := range recs {
		values = append(values, string(r.Value))
	}
	return values
}

// committedState returns the newest value of each key of "state" that a
// read_committed reader sees.
func committedState(ctx context.Context, t *testing.T, addrs []string) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, r := range stateRecords(ctx, t, addrs, kgo.ReadCommitted()) {
		state[string(r.Key)] = string(r.Value)
	}
	return state
}

// TestKfakeCompactsOpenTransactions shows why the broker compacts by
// itself (compaction.go): kfake's own compaction takes the record of a
// transaction still open for its key's newest and deletes the committed
// record; once the transaction aborts, the key has no committed record
// left. Should kfake stop at open transactions one day, this test fails,
// and the broker's gate can go.
func TestKfakeCompactsOpenTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	txn := openOverwrite(ctx, t, c.ListenAddrs())
	c.Compact()
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	got := committedState(ctx, t, c.ListenAddrs())
	if want := map[string]string{"other": "x"}; !maps.Equal(got, want) {
		t.Fatalf("kfake's compaction left %v; expected it to lose k's committed record (%v)", got, want)
	}
}

// TestCompactionStopsAtOpenTransactions: the broker does not compact while
// a compacted topic holds an open transaction, so the committed record a
// transaction overwrites survives its abort; once the transaction ended,
// it compacts.
func TestCompactionStopsAtOpenTransactions(t *testing.T) {
	b := start(t, CompactionInterval(time.Hour)) // compactions only when asked
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	txn := openOverwrite(ctx, t, b.Addrs())
	if done, err := b.compactor.try(ctx); err != nil || done {
		t.Fatalf("compaction with a transaction open: compacted %v, error %v; want neither", done, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*compactRetry)
	err := b.Compact(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Compact with a transaction open for its whole context: %v, want a deadline error", err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"k": "committed", "other": "x"}
	if got := committedState(ctx, t, b.Addrs()); !maps.Equal(got, want) {
		t.Fatalf("after the abort: %v, want %v", got, want)
	}
	if err := b.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committedState(ctx, t, b.Addrs()); !maps.Equal(got, want) {
		t.Fatalf("after compaction: %v, want %v", got, want)
	}
	// It compacted: the aborted record is gone.
	if values := valuesOf(stateRecords(ctx, t, b.Addrs(), kgo.ReadUncommitted())); !slices.Equal(values, []string{"committed", "x"}) {
		t.Fatalf("records after compaction: %q, want the aborted one gone", values)
	}
}

// TestKfakeDropsAbortMarkers shows why the broker does not compact on its
// own (compaction.go): with no transaction open, kfake's compaction drops
// the abort marker of a producer left with no record in the compacted
// range, but keeps the aborted transaction in its index; a read_committed
// reader from the start then skips that producer's next committed record.
// Should kfake keep such markers one day, this test fails, and periodic
// compaction can be on by default.
func TestKfakeDropsAbortMarkers(t *testing.T) {
	b := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	compact := "compact"
	if err := EnsureTopicsOpts(ctx, b.clientOpts, 1, map[string]*string{"cleanup.policy": &compact}, "state"); err != nil {
		t.Fatal(err)
	}
	plain := client(t, b)
	txn := client(t, b, kgo.TransactionalID("writer"))
	put := func(cl *kgo.Client, k, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	inTxn := func(k, v string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		put(txn, k, v)
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	put(plain, "first", "1")
	inTxn("d", "aborted", kgo.TryAbort)
	put(plain, "other", "x") // the marker is not the partition's newest batch
	if err := b.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	inTxn("d", "committed", kgo.TryCommit)
	got := committedState(ctx, t, b.Addrs())
	if want := map[string]string{"first": "1", "other": "x"}; !maps.Equal(got, want) {
		t.Fatalf("read_committed after compaction: %v; expected kfake to hide the committed d (%v)", got, want)
	}
}
