package stats_test

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

func ExampleEncodeReport() {
	r := flow.Report{
		Budget: "spring",
		Source: stats.SourceName("events", 3),
		At:     time.Date(2026, 3, 21, 12, 0, 0, 0, time.UTC),
		Total:  flow.Counters{Offered: 1000, Passed: 250},
	}
	key, value, err := stats.EncodeReport(r)
	if err != nil {
		panic(err)
	}
	fmt.Printf("key   % x\n", key)
	fmt.Printf("value %d bytes, version %d.%d\n", len(value), value[0], value[1])

	back, deleted, err := stats.DecodeReport(key, value)
	fmt.Println(back.Budget, back.Source, back.At, back.Total.Passed, deleted, err)

	// A nil value is a tombstone.
	gone, deleted, _ := stats.DecodeReport(key, nil)
	fmt.Println(gone.Source, deleted)
	// Output:
	// key   01 00 06 73 70 72 69 6e 67 00 08 65 76 65 6e 74 73 2f 33
	// value 46 bytes, version 1.1
	// spring events/3 2026-03-21 12:00:00 +0000 UTC 250 false <nil>
	// events/3 true
}

func ExampleCheckpoint_Report() {
	c := stats.Checkpoint{Source: "events/3", Offset: 42, Reports: []flow.Report{
		{Budget: "spring", Total: flow.Counters{Passed: 7}},
	}}
	value, _ := stats.EncodeCheckpoint(c)
	back, _ := stats.DecodeCheckpoint("events/3", value)
	// back.Report fits flow's restore callback: func(budget) (Report, bool).
	r, ok := back.Report("spring")
	fmt.Println(back.Offset, r.Source, r.Total.Passed, ok)
	// Output:
	// 42 events/3 7 true
}

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
