package broker

import (
	"math"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minPartitionBytes is the least a read_committed fetch may ask of a
// partition after wholePartitions shares the response limit out. kfake
// returns a partition whose next batch is larger only when it is the
// first of the response, so the share must not be tiny; and a response
// stays within kgo's 100 MiB read limit up to 400 partitions (a
// `throttler scale` reader asks 64 MiB over 3 topics of 48 partitions).
const minPartitionBytes = 256 << 10

// wholePartitions makes kfake answer every read_committed Fetch with
// whole partitions, so that each partition's data comes with its aborted
// transactions.
//
// kfake copies a partition's batches and then lists the aborted
// transactions among them; when the response's MaxBytes runs out in the
// middle of a partition, it leaves the loop over partitions at once,
// past the listing: the partition's batches go out with no aborted
// transaction, and a read_committed reader returns the records of an
// aborted transaction among them (docs/kafka-notes.md;
// internal/testsupport/kfakerepro TestFetchCutMidPartitionListsNoAbortedTxn).
//
// The response limit is lifted, so that kfake never cuts a partition;
// instead the client's MaxBytes is shared out among the partitions
// (never below minPartitionBytes, never above what the client asked of
// each), which keeps the response about as large as the client asked.
// The fetch goes without a fetch session: with one, an incremental
// request names only the partitions that changed, and the share could
// not be computed; the client then sends full requests, as with a broker
// whose session cache is full.
func wholePartitions(req kmsg.Request) (kmsg.Response, error, bool) {
	f, ok := req.(*kmsg.FetchRequest)
	if !ok || f.IsolationLevel != 1 {
		return nil, nil, false
	}
	f.SessionEpoch = -1 // kfake drops the session f.SessionID names, if any
	f.ForgottenTopics = nil
	n := 0
	for _, t := range f.Topics {
		n += len(t.Partitions)
	}
	if n > 0 {
		share := max(f.MaxBytes/int32(n), minPartitionBytes)
		for i := range f.Topics {
			for j := range f.Topics[i].Partitions {
				p := &f.Topics[i].Partitions[j]
				p.PartitionMaxBytes = min(p.PartitionMaxBytes, share)
			}
		}
	}
	f.MaxBytes = math.MaxInt32
	return nil, nil, false // not handled: kfake answers the changed request
}

// guardFetches installs wholePartitions on c.
func guardFetches(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Fetch), wholePartitions)
}
