package flow_test

import (
	"context"
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
			r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter)
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

// A consumer that may take 100 records a second: when a batch does not fit,
// it pauses fetching until retryAt instead of dropping records.
func ExampleWindowLimit() {
	limit, _ := flow.NewWindowLimit(100, time.Second)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, batch := range []int64{60, 30, 40, 40} {
		ok, retryAt := limit.Reserve(now, batch)
		if !ok {
			fmt.Printf("batch of %d: pause until +%v\n", batch, retryAt.Sub(now))
			now = retryAt
			ok, _ = limit.Reserve(now, batch)
		}
		fmt.Printf("batch of %d: ok=%v, %d left\n", batch, ok, limit.Remaining(now))
		now = now.Add(100 * time.Millisecond)
	}
	// Output:
	// batch of 60: ok=true, 40 left
	// batch of 30: ok=true, 10 left
	// batch of 40: pause until +800ms
	// batch of 40: ok=true, 60 left
	// batch of 40: ok=true, 20 left
}

func ExampleConcurrencyLimit() {
	inFlight, _ := flow.NewConcurrencyLimit(2)
	ctx := context.Background()
	_ = inFlight.Acquire(ctx)
	fmt.Println(inFlight.TryAcquire(), inFlight.TryAcquire(), inFlight.InFlight())
	inFlight.Release()
	fmt.Println(inFlight.TryAcquire(), inFlight.InFlight())
	// Output:
	// true false 2
	// true 2
}
