package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A fetch of more records than applyChunk is applied in chunks, in order:
// a definition and its tombstone on either side of a chunk's end leave no
// definition, and every other definition is kept.
func TestViewAppliesALargeFetchInOrder(t *testing.T) {
	const n = 3*applyChunk + 10
	var recs []*kgo.Record
	for k := range n {
		key, val, err := EncodeBudgetDef(BudgetDef{Budget: flow.Budget{Name: fmt.Sprintf("b-%06d", k), Target: 10, Period: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Key: key, Value: val, Offset: int64(len(recs))})
		if k == applyChunk-2 { // its tombstone is the chunk's first record after
			recs = append(recs, &kgo.Record{Key: key, Offset: int64(len(recs))})
		}
	}
	v := &View{}
	v.cfg.now = time.Now
	v.apply(kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "stats", Partitions: []kgo.FetchPartition{{Records: recs}}}}}}, nil)
	if got := len(v.BudgetNames()); got != n-1 {
		t.Fatalf("%d definitions, want %d", got, n-1)
	}
	if v.HasBudgetDef(fmt.Sprintf("b-%06d", applyChunk-2)) {
		t.Fatal("the definition deleted across a chunk's end is held")
	}
	if st := v.Stats(); st.Applied != n || st.Deleted != 1 {
		t.Fatalf("applied %d, deleted %d; want %d and 1", st.Applied, st.Deleted, n)
	}
	if cap(v.ops) >= 2*applyChunk {
		t.Fatalf("the view keeps room for %d ops, twice a chunk (%d) or more", cap(v.ops), applyChunk)
	}
}
