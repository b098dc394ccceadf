package consumer

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// A produce error reaches the worker through the record's promise, when
// the broker answers. An answer that comes after the commit began (here
// the broker holds the first produce to the output topic until the
// worker's next commit has started) must still abort the transaction: kgo commits a transaction whose records
// failed if asked to, and the input offsets of the refused events would
// be committed with no output written. Under the race detector produce
// answers are slow enough to do this on their own: the worker lost the
// events and, with nothing left to process, went quiet.
func TestLateProduceErrorAbortsTransaction(t *testing.T) {
	env := newTestEnv(t)
	const n = 2000
	recs, bad := eventRecords(0, n)
	w := env.startWorker(t, "w1")
	waitReady(t, w.w) // the stats topic exists
	out := env.cluster.TopicInfo("out").TopicID
	commits := func() uint64 { return sampleCount(w.w.m.commitSeconds.WithLabelValues("wait")) }

	refuse := env.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out",
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	var held atomic.Bool // the first produce to "out" was held
	env.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		env.cluster.KeepControl()
		if writesTo(req.(*kmsg.ProduceRequest), out) && held.CompareAndSwap(false, true) {
			before := commits()
			env.cluster.SleepControl(func() {
				for commits() == before { // a condition polled
					time.Sleep(time.Millisecond)
				}
			})
		}
		return nil, nil, false
	})

	env.produce(recs)
	aborted := w.w.m.commits.WithLabelValues("aborted")
	testwait.Eventually(t, "a transaction aborted while the output topic refused every produce", func() bool {
		var m dto.Metric
		return aborted.Write(&m) == nil && m.GetCounter().GetValue() >= 1
	})
	refuse.Remove()
	env.waitCommitted("events")
	w.stop(t)
	env.verify(t, n, bad, 0, 0)
}

// writesTo reports whether a produce request writes to the topic of ID id
// (kgo's produce requests name topics by ID).
func writesTo(req *kmsg.ProduceRequest, id [16]byte) bool {
	for _, t := range req.Topics {
		if t.TopicID == id {
			return true
		}
	}
	return false
}

// sampleCount returns the number of observations of a histogram.
func sampleCount(o prometheus.Observer) uint64 {
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}
