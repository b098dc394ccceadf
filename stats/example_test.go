package stats_test

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// A source's ledger at three commits: a snapshot first, then only what
// changed, then a heartbeat once the source was idle for a second.
func ExampleLedger() {
	l, err := stats.NewLedger("stats", stats.LedgerState{Source: "events/3", Offset: -1}, 0)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 21, 12, 0, 0, 0, time.UTC)
	commit := func(c stats.Changes, offset int64, at time.Time) {
		recs, err := l.Records(c, offset, at)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			lr, _ := stats.DecodeLedger(r.Key, r.Value)
			fmt.Printf("partition %d: %s %d, seq %d, %d entries\n", r.Partition, lr.Part, lr.Index, lr.Seq, len(lr.Reports))
		}
		if recs == nil {
			fmt.Println("nothing")
		}
		l.Committed() // the transaction committed
	}
	commit(stats.Changes{Reports: []flow.Report{{Budget: "spring", Total: flow.Counters{Offered: 10, Passed: 4}}}}, 100, now)
	commit(stats.Changes{Reports: []flow.Report{{Budget: "summer", Total: flow.Counters{Offered: 3, Passed: 1}}}}, 150, now.Add(time.Second))
	commit(stats.Changes{}, 150, now.Add(1500*time.Millisecond))
	commit(stats.Changes{}, 150, now.Add(2*time.Second))
	r, _ := l.Report("spring")
	fmt.Println("spring passed", r.Total.Passed)
	// Output:
	// partition 3: snapshot 0, seq 1, 1 entries
	// partition 3: delta 0, seq 2, 1 entries
	// nothing
	// partition 3: heartbeat 0, seq 3, 0 entries
	// spring passed 4
}
