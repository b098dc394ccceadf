package consumer

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/testwait"
	"github.com/throttler/throttler/stats"
)

// statsRecord writes a raw record to partition p of the stats topic.
func (env *testEnv) statsRecord(p int32, key, value []byte) {
	env.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		env.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "stats", Partition: p, Key: key, Value: value}).FirstErr(); err != nil {
		env.t.Fatal(err)
	}
}

// committedOffsets returns the group's committed offsets of topic.
func (env *testEnv) committedOffsets(topic string) map[int32]int64 {
	env.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	os, err := env.adm.FetchOffsets(ctx, "g")
	if err != nil {
		env.t.Fatal(err)
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

// TestParkedPartitions writes, under the ledger keys of two input
// partitions, a value of another major version (the 2-byte 0x02 0x00)
// and a heartbeat with an offset past the partition's end (2^40), while
// their worker is down. Started again (two workers), the workers park
// those two partitions (held at their committed offsets: nothing is read
// from them, nothing lost) and run the ten others; the parked ones show in
// /readyz, the metrics and the workers' status records. Once the bad keys
// are tombstoned (what `throttler ledger repair` writes for such keys),
// the workers start them again within ParkRetry, and every event ends in
// exactly one topic with the ledgers counting exactly the outputs. Both
// deliveries: at least once the held offset is committed as a delay
// budget's is.
func TestParkedPartitions(t *testing.T) {
	for _, d := range []Delivery{ExactlyOnce, AtLeastOnce} {
		t.Run(d.String(), func(t *testing.T) { testParkedPartitions(t, d) })
	}
}

func testParkedPartitions(t *testing.T, delivery Delivery) {
	env := newTestEnv(t)
	const n = 4800
	recs, bad := eventRecords(0, n)
	env.produce(recs[:2400])
	w := env.startWorker(t, "w0", WithDelivery(delivery))
	env.waitCommitted("events")
	w.stop(t)

	hb3, _ := stats.LedgerKey("events/3", stats.LedgerHeartbeat, 0)
	env.statsRecord(3, hb3, []byte{2, 0})
	hb5, _ := stats.LedgerKey("events/5", stats.LedgerHeartbeat, 0)
	_, far, err := stats.EncodeLedger(stats.LedgerRecord{Source: "events/5", Part: stats.LedgerHeartbeat, Seq: 1 << 40, Offset: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	env.statsRecord(5, hb5, far)
	before := env.committedOffsets("events")
	env.produce(recs[2400:])

	w1 := env.startWorker(t, "w1", ParkRetry(200*time.Millisecond), WithDelivery(delivery))
	w2 := env.startWorker(t, "w2", ParkRetry(200*time.Millisecond), WithDelivery(delivery))
	ws := []*Worker{w1.w, w2.w}
	testwait.Eventually(t, "both partitions parked", func() bool {
		return len(w1.w.parkedReasons())+len(w2.w.parkedReasons()) == 2
	})
	// The ten others run to their end; the two parked stay where they were.
	ends := env.endOffsets("events")
	testwait.Eventually(t, "the other partitions consumed", func() bool {
		got := env.committedOffsets("events")
		for p, end := range ends {
			if p != 3 && p != 5 && got[p] < end {
				return false
			}
		}
		return true
	})
	got := env.committedOffsets("events")
	for _, p := range []int32{3, 5} {
		if got[p] != before[p] {
			t.Fatalf("parked partition %d: committed offset %d, was %d", p, got[p], before[p])
		}
	}
	testwait.Eventually(t, "both parked with their reasons, in /readyz", func() bool {
		reasons := map[string]string{}
		readyz := ""
		for _, w := range ws {
			for src, r := range w.parkedReasons() {
				reasons[src] = r
			}
			readyz += httpGet(t, "http://"+w.HTTPAddr().String()+"/readyz")
		}
		return strings.Contains(reasons["events/3"], "major version 2") && strings.Contains(reasons["events/5"], "beyond") &&
			strings.Contains(readyz, "parked") && strings.Contains(readyz, "events/3") && strings.Contains(readyz, "events/5")
	})
	metrics := ""
	for _, w := range ws {
		metrics += httpGet(t, "http://"+w.HTTPAddr().String()+"/metrics")
	}
	for _, m := range []string{`throttler_parks_total{reason="unknown_version"}`, `throttler_parks_total{reason="beyond_end"}`, "throttler_parked_partitions"} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics lacks %s", m)
		}
	}
	testwait.Eventually(t, "the parked partitions in the workers' status records", func() bool {
		parked := map[string]bool{}
		for _, st := range w1.w.view.Workers() {
			if st.Worker == w1.w.cfg.txnID || st.Worker == w2.w.cfg.txnID {
				for _, p := range st.Parked {
					parked[p.Source] = true
				}
			}
		}
		return parked["events/3"] && parked["events/5"]
	})

	// The repair: the bad keys tombstoned.
	env.statsRecord(3, hb3, nil)
	env.statsRecord(5, hb5, nil)
	env.waitCommitted("events")
	for _, w := range ws {
		if err := w.parkedErr(); err != nil {
			t.Fatalf("after the repair: %v", err)
		}
	}
	w1.stop(t)
	w2.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// endOffsets returns the end offsets of topic's partitions.
func (env *testEnv) endOffsets(topic string) map[int32]int64 {
	env.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	ends, err := env.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		env.t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
