package stats

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// catchUpTopic writes, to a 48-partition "stats" topic, the ledgers of 48
// sources over 100k budgets with 5,000 non-zero per source (a snapshot and
// a chain of 200 deltas of 10 changes each), as compaction leaves them.
// It returns the live bytes and records of the topic.
func catchUpTopic(b *testing.B, conn []kgo.Opt) (ledgerBytes, ledgerRecs int) {
	ensure(b, conn, StatsTopic("stats", 48))
	cl := newClient(b, conn, kgo.RecordPartitioner(LedgerPartitioner(nil, "stats")), kgo.MaxBufferedRecords(1<<20))
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
		live := d.log.compacted(true)
		for _, r := range live {
			ledgerBytes += len(r.Key) + len(r.Value)
		}
		ledgerRecs += len(live)
		produceSync(b, cl, live...)
	}
	return ledgerBytes, ledgerRecs
}

// BenchmarkViewCatchUp starts a View over the compacted topic of
// catchUpTopic (embedded broker in this process) and times it to caught
// up: the ledgers of 240k non-zero entries.
func BenchmarkViewCatchUp(b *testing.B) {
	cluster, conn := newCluster(b)
	lb, lr := catchUpTopic(b, conn)
	cluster.Compact()
	for _, c := range []struct {
		topic       string
		bytes, recs int
	}{{"stats", lb, lr}} {
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
