package stats

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// catchUpTopics writes, to a 48-partition "stats" topic, the ledgers of 48
// sources over 100k budgets with 5,000 non-zero per source (a snapshot and
// a chain of 200 deltas of 10 changes each), and to "today" one kind-1
// report per non-zero (budget, source), as today's workers leave it; then
// compacts. It returns the live bytes and records of each topic.
func catchUpTopics(b *testing.B, conn []kgo.Opt) (ledgerBytes, ledgerRecs, todayBytes, todayRecs int) {
	ensure(b, conn, StatsTopic("stats", 48), StatsTopic("today", 48))
	cl := newClient(b, conn, kgo.RecordPartitioner(LedgerPartitioner(nil, "stats")), kgo.MaxBufferedRecords(1<<20))
	pub, _ := NewPublisher("today")
	rng := rand.New(rand.NewPCG(7, 8))
	for s := range 48 {
		d := newDriver(b, 0, newTestLedger(b, SourceName("events", int32(s))))
		for _, k := range rng.Perm(100_000)[:5_000] {
			d.budgets = append(d.budgets, fmt.Sprintf("campaign/%06d", k))
		}
		d.fill()
		for range 200 {
			d.commit(Changes{Reports: d.touch(changedPerCommit)})
		}
		st := d.l.State()
		live := d.log.compacted(true)
		for _, r := range live {
			ledgerBytes += len(r.Key) + len(r.Value)
		}
		ledgerRecs += len(live)
		produceSync(b, cl, live...)
		reports, err := pub.Records(st.Reports)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range reports {
			todayBytes += len(r.Key) + len(r.Value)
		}
		todayRecs += len(reports)
		produceSync(b, cl, reports...)
	}
	return ledgerBytes, ledgerRecs, todayBytes, todayRecs
}

// BenchmarkViewCatchUp starts a View over each compacted topic of
// catchUpTopics (embedded broker in this process) and times it to caught
// up: the ledger (240k non-zero entries) against today's kind-1 records of
// the same pairs.
func BenchmarkViewCatchUp(b *testing.B) {
	cluster, conn := newCluster(b)
	lb, lr, tb, tr := catchUpTopics(b, conn)
	cluster.Compact()
	for _, c := range []struct {
		topic       string
		bytes, recs int
	}{{"stats", lb, lr}, {"today", tb, tr}} {
		b.Run("topic="+c.topic, func(b *testing.B) {
			for b.Loop() {
				v, err := NewView(testCtx(b), c.topic, conn)
				if err != nil {
					b.Fatal(err)
				}
				if err := v.WaitCaughtUp(testCtx(b)); err != nil {
					b.Fatal(err)
				}
				if st := v.Stats(); st.Sources != 240_000 || st.Skipped != 0 {
					b.Fatalf("caught up with %+v", st)
				}
				v.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/catch-up")
			b.ReportMetric(float64(c.bytes)/1e6, "MB")
			b.ReportMetric(float64(c.recs), "records")
		})
	}
}
