package kfakerepro

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A kfake broker SIGKILLed while a transaction is open aborts that
// transaction when it restarts (full replay of its data dir: the producer
// has data batches and no control batch), but writes no abort marker: it
// only lists the range as aborted and bumps the producer's epoch in
// memory. Two things break:
//
//  1. A read_committed kgo reader drops a producer's transactional batches
//     from the first offset of a listed aborted transaction until that
//     producer's abort marker (as the Java client does). With no marker,
//     every later transaction of the same producer id (the same
//     transactional id: kfake reuses its producer id), committed after
//     the restart, is dropped when it comes in the same fetch response as
//     the aborted range: committed records are missing from the read.
//  2. Killed again before a clean shutdown, the broker replays the log
//     anew: the aborted batches and the next transaction of the same
//     producer, closed by a COMMIT marker, read as one committed
//     transaction: the aborted records become visible.
//
// Real Kafka's coordinator writes abort markers for the transactions it
// aborts, so a reader always finds the end of an aborted range.

// crashedTxn leaves a transaction of transactional id "x" open with the
// record "aborted" in a broker persisting in dir, SIGKILLs the broker,
// restarts it and commits the record "committed" with a new producer of
// the same transactional id, then writes the non-transactional record
// "end". It returns the restarted broker.
func crashedTxn(t *testing.T, dir string) *broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := startBroker(t, dir)
	p := producer(t, b, kgo.TransactionalID("x"), kgo.TransactionTimeout(time.Minute))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.kill(t) // the transaction is open
	p.Close()

	b = b.restart(t)
	p = producer(t, b, kgo.TransactionalID("x"), kgo.TransactionTimeout(time.Minute))
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}
	plain := producer(t, b)
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCrashAbortedTxnHidesLaterCommits(t *testing.T) {
	skipUnlessRepro(t, "a transaction aborted by the restart after a SIGKILL has no abort marker, "+
		"so read_committed readers drop the producer's later commits")
	b := crashedTxn(t, t.TempDir())
	if got := read(t, b, kgo.ReadUncommitted()); !slices.Equal(got, []string{"aborted", "committed", "end"}) {
		t.Fatalf("read_uncommitted: %q, want aborted, committed, end", got)
	}
	if got := read(t, b, kgo.ReadCommitted()); !slices.Equal(got, []string{"committed", "end"}) {
		t.Errorf("read_committed: %q, want committed, end: a committed record is missing", got)
	}
}

func TestSecondCrashRevivesAbortedTxn(t *testing.T) {
	skipUnlessRepro(t, "a second SIGKILL replays the unmarked aborted batches as part of the producer's next committed transaction")
	dir := t.TempDir()
	b := crashedTxn(t, dir)
	b.kill(t)
	b = b.restart(t)
	if got := read(t, b, kgo.ReadCommitted()); slices.Contains(got, "aborted") {
		t.Errorf("read_committed after a second crash: %q: the aborted record is visible", got)
	}
}

func producer(t *testing.T, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("t")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// read returns the values of topic t's data records up to and including
// the non-transactional record "end", which no aborted range hides.
func read(t *testing.T, b *broker, level kgo.IsolationLevel, opts ...kgo.Opt) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for !slices.Contains(got, "end") {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record \"end\" read; read %q", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
