package flow_test

import (
	"fmt"
	"time"

	"github.com/throttler/throttler/flow"
)

// The call of redis-cell's README and of seed 001: 30 replies per 60
// seconds, bursts of up to 15+1.
func ExampleCap() {
	replies, err := flow.NewCap(15, 30, 60*time.Second) // CL.THROTTLE key 15 30 60
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(r flow.CapResult) {
		fmt.Printf("limited=%v limit=%d remaining=%d retry_after=%v reset_after=%v\n",
			r.Limited, replies.Limit(), r.Remaining(), r.RetryAfter, r.ResetAfter)
	}

	show(replies.Throttle("laoqian:reply", now, 1))
	replies.Throttle("laoqian:reply", now, 15) // the rest of the burst
	show(replies.Throttle("laoqian:reply", now, 1))
	show(replies.Throttle("laoqian:reply", now.Add(2*time.Second), 1))
	// Output:
	// limited=false limit=16 remaining=15 retry_after=-1ns reset_after=2s
	// limited=true limit=16 remaining=0 retry_after=2s reset_after=32s
	// limited=false limit=16 remaining=0 retry_after=-1ns reset_after=32s
}

// Rates well beyond one per second keep their precision.
func ExampleCap_fast() {
	c, _ := flow.NewCap(0, 5000, time.Second) // 5000/s: one every 200µs
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := []byte("sensor-7")
	for _, d := range []time.Duration{0, 150 * time.Microsecond, 200 * time.Microsecond} {
		r := c.ThrottleBytes(key, t0.Add(d), 1)
		fmt.Printf("t0+%v limited=%v retry_after=%v\n", d, r.Limited, r.RetryAfter)
	}
	// Output:
	// t0+0s limited=false retry_after=-1ns
	// t0+150µs limited=true retry_after=50µs
	// t0+200µs limited=false retry_after=-1ns
}
