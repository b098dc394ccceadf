package hangtxn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The expected partitions are Java's String.hashCode of each id (computed
// apart from this package, over UTF-16 code units), its absolute value
// taken modulo the partition count, as Kafka places a transactional id;
// the two with a 10-partition topic are where a broker put them.
func TestKeyPartition(t *testing.T) {
	for _, c := range []struct {
		id   string
		n    int32
		want int32
	}{
		{"kafkabroker-test", 50, 24}, // hashCode 245736224
		{"kafkabroker-test", 10, 4},
		{"hangtxn-test", 10, 5}, // hashCode -968637305
		{"rst-w0", 50, 29},      // hashCode -921536429
		{"a😀b", 50, 44},         // a surrogate pair: hashCode 57849694
		{"", 50, 0},
		{"polygenelubricants", 50, 0}, // hashCode -2^31, whose Utils.abs is 0
	} {
		if got := keyPartition(c.id, c.n); got != c.want {
			t.Errorf("keyPartition(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
	}
}

func value(pid int64, epoch int16, state kmsg.TransactionState, tv int16, topic string, parts ...int32) kmsg.TxnMetadataValue {
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch, v.State, v.ClientTransactionVersion = pid, epoch, state, tv
	if topic != "" {
		v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: topic, Partitions: parts}}
	}
	return v
}

func TestDecide(t *testing.T) {
	const (
		completeCommit kmsg.TransactionState = 4
		ongoing        kmsg.TransactionState = 1
	)
	hang := Hang{Topic: "out", Partition: 3, ProducerID: 7, ProducerEpoch: 4, TxnID: "w0", NowID: 7, NowEpoch: 6}
	for _, c := range []struct {
		name     string
		records  []stateRecord
		known    bool
		commit   bool
		whyEmpty bool
	}{
		{"committed", []stateRecord{
			{"w0", value(7, 4, ongoing, 2, "out", 3)},
			{"w0", value(7, 5, prepareCommit, 2, "out", 1, 3)},
			{"w0", value(7, 5, completeCommit, 2, "")},
		}, true, true, true},
		{"aborted", []stateRecord{
			{"w0", value(7, 5, prepareAbort, 2, "out", 3)},
		}, true, false, true},
		{"the last decision for the epoch counts", []stateRecord{
			{"w0", value(7, 5, prepareAbort, 2, "out", 3)},
			{"w0", value(7, 5, prepareCommit, 2, "out", 3)},
		}, true, true, true},
		{"another transactional id", []stateRecord{
			{"w1", value(7, 5, prepareCommit, 2, "out", 3)},
		}, false, false, false},
		{"another partition", []stateRecord{
			{"w0", value(7, 5, prepareCommit, 2, "out", 2)},
		}, false, false, false},
		{"the records' own epoch is an earlier transaction's decision", []stateRecord{
			{"w0", value(7, 4, prepareCommit, 2, "out", 3)},
		}, false, false, false},
		{"a later transaction", []stateRecord{
			{"w0", value(7, 6, prepareCommit, 2, "out", 3)},
		}, false, false, false},
		{"another producer id", []stateRecord{
			{"w0", value(8, 5, prepareCommit, 2, "out", 3)},
		}, false, false, false},
		{"transactions v1 reuse the epoch", []stateRecord{
			{"w0", value(7, 5, prepareCommit, 1, "out", 3)},
		}, false, false, false},
		{"nothing logged", nil, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hang
			decide(&h, c.records)
			if h.Wait {
				t.Fatalf("waits (%s) with the producer past the marker's epoch", h.Why)
			}
			h = hang
			decide(&h, c.records)
			if h.Known != c.known || (c.known && h.Commit != c.commit) {
				t.Fatalf("known %v commit %v (%s), want known %v commit %v", h.Known, h.Commit, h.Why, c.known, c.commit)
			}
			if c.known && h.MarkerEpoch != 5 {
				t.Errorf("marker epoch %d, want 5 (one above the records')", h.MarkerEpoch)
			}
			if (h.Why == "") != c.whyEmpty {
				t.Errorf("why %q", h.Why)
			}
		})
	}
}

// A decision is held back while its producer's next transaction is under
// way at the marker's epoch: its records carry that epoch.
func TestDecideWaitsForTheProducer(t *testing.T) {
	recs := []stateRecord{{"w0", value(7, 5, prepareCommit, 2, "out", 3)}}
	for _, c := range []struct {
		nowID    int64
		nowEpoch int16
		state    string
		wait     bool
	}{
		{7, 5, "Ongoing", true},         // its next transaction, at the marker's epoch
		{7, 5, "PrepareAbort", true},    // ending: the epoch moves on
		{7, 5, "CompleteCommit", false}, // idle since: nothing carries the epoch yet
		{7, 6, "Ongoing", false},        // a later transaction: its records carry 6
		{9, 0, "Ongoing", false},        // a new producer ID
		{-1, -1, "", false},             // the coordinator no longer knows the id
	} {
		h := Hang{Topic: "out", Partition: 3, ProducerID: 7, ProducerEpoch: 4, TxnID: "w0", NowID: c.nowID, NowEpoch: c.nowEpoch, NowState: c.state}
		decide(&h, recs)
		if h.Wait != c.wait || h.Known == c.wait {
			t.Errorf("producer now %d/%d %s: wait %v known %v (%s), want wait %v", c.nowID, c.nowEpoch, c.state, h.Wait, h.Known, h.Why, c.wait)
		}
	}
}

// A transaction that committed a group's offsets is completed only while
// that offsets partition is still open with it: once something else ended
// it there, the group's offsets may say aborted whatever the coordinator
// decided.
func TestDecideFollowsTheGroupOffsets(t *testing.T) {
	v := value(7, 5, prepareCommit, 2, "out", 3)
	v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: OffsetsTopic, Partitions: []int32{9}})
	recs := []stateRecord{{"w0", v}}
	out := Hang{Topic: "out", Partition: 3, ProducerID: 7, ProducerEpoch: 4, TxnID: "w0", NowID: 7, NowEpoch: 6}
	offs := out
	offs.Topic, offs.Partition = OffsetsTopic, 9
	for _, c := range []struct {
		name  string
		hangs []Hang
		known bool
	}{
		{"offsets still open", []Hang{out, offs}, true},
		{"offsets ended", []Hang{out}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hangs := append([]Hang(nil), c.hangs...)
			for i := range hangs {
				decide(&hangs[i], recs)
			}
			offsetsEnded(hangs)
			for _, h := range hangs {
				if h.Known != c.known || (!c.known && h.Why == "") {
					t.Errorf("%s/%d: known %v (%s), want %v", h.Topic, h.Partition, h.Known, h.Why, c.known)
				}
			}
		})
	}
}
