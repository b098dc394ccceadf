package stats

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// patience bounds every wait in these tests: generous, because the machine is
// small and shared; tests poll conditions and never assert on speed.
const patience = 20 * time.Second

// testCtx is a context that ends before the test binary's own timeout.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	t.Cleanup(cancel)
	return ctx
}

// newCluster starts a one-broker kfake cluster on an ephemeral loopback port
// (kfake listens on 127.0.0.1, port 0 unless kfake.Ports is given) and
// returns it with the connection options of a client.
func newCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []kgo.Opt) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
}

func newClient(t testing.TB, conn []kgo.Opt, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, conn...), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ensure(t testing.TB, conn []kgo.Opt, specs ...TopicSpec) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, conn))
	if err := EnsureTopics(testCtx(t), adm, specs...); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or patience runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.EventuallyEvery(t, patience, testwait.Tick, what, cond)
}

func produceSync(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// txn runs one transaction producing recs, committing or aborting it.
func txn(t *testing.T, cl *kgo.Client, commit bool, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, cl, recs...)
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(testCtx(t), end); err != nil {
		t.Fatal(err)
	}
}

// ledgerRecord returns the stats record of r, for topic.
func ledgerRecord(t testing.TB, topic string, r LedgerRecord) *kgo.Record {
	t.Helper()
	k, v, err := EncodeLedger(r)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: topic, Key: k, Value: v}
}

// snapshotRecord returns the record of a whole ledger of source in one
// snapshot chunk, at sequence seq and instant at: its budget entries
// (reports) and experiment entries (variants).
func snapshotRecord(t testing.TB, topic, source string, seq uint64, at time.Time, reports []flow.Report, variants ...VariantCounts) *kgo.Record {
	t.Helper()
	return ledgerRecord(t, topic, LedgerRecord{Source: source, Part: LedgerSnapshot, Chunks: 1, Seq: seq, At: at, Offset: int64(seq),
		Reports: reports, Variants: variants})
}
